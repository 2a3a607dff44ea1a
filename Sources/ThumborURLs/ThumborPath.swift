import Foundation
import ImagePipelineKit

/// thumbor's URL syntax: the subset this service renders, and a 400 for everything else.
///
/// A path is `/{signature|unsafe}/[trim/][AxB:CxD/][fit-in/][-]WxH/[halign/valign/][smart/][filters:…/]source`,
/// each optional part in that order. Supported: the source crop `AxB:CxD`, `fit-in`, sizes with `0`, `orig` and
/// flips, `left|center|right`, `top|middle|bottom`, `smart`, and the filters `format(jpeg|png|webp|avif)`,
/// `quality(n)`, `no_upscale()`, `fill(color)`, `strip_exif()`, `strip_icc()` and `max_bytes(n)`. Refused with a
/// 400 that names the part: `meta/`, `debug/`, `trim`, `adaptive-` and `full-` fit-in, and any other filter. The
/// source is percent-decoded; without a scheme it is an `http://` URL, as thumbor reads it.
public enum ThumborPath {
    /// The first part of the path.
    public enum Signature: Hashable, Sendable {
        /// `unsafe/`: no signature.
        case unsafe
        /// thumbor's URL-safe base64 HMAC-SHA1 of ``Parsed/signedPart``.
        case hmac(String)
    }

    /// A parsed path.
    public struct Parsed: Hashable, Sendable {
        public var signature: Signature
        /// Everything after `/{signature}/`, exactly as it came: what the signature signs.
        public var signedPart: Substring
        public var request: ThumbnailRequest
    }

    /// Parses `path` (`/unsafe/300x200/…`, starting with a slash, the query string removed).
    /// - Throws: ``ServiceError/badRequest(_:)`` naming the part it cannot read.
    public static func parse(_ path: Substring) throws(ServiceError) -> Parsed {
        var rest = path.drop { $0 == "/" }
        guard let slash = rest.firstIndex(of: "/") else { throw .badRequest("no signature or unsafe/ part") }
        let token = rest[..<slash]
        let signature: Signature = token == "unsafe" ? .unsafe : .hmac(String(token))
        rest = rest[rest.index(after: slash)...]
        let signedPart = rest
        var request = ThumbnailRequest(source: "")
        var reader = PartReader(rest)

        if let part = reader.peek, part == "meta" || part == "debug" {
            throw .badRequest("\(part)/ is not supported")
        }
        if let part = reader.peek, part == "trim" || part.hasPrefix("trim:") {
            throw .badRequest("trim is not supported")
        }
        if let part = reader.peek, let crop = try sourceCrop(part) {
            request.sourceCrop = crop
            reader.advance()
        }
        if let part = reader.peek, part.hasSuffix("fit-in") {
            guard part == "fit-in" else { throw .badRequest("\(part) is not supported (only fit-in)") }
            request.fitsIn = true
            reader.advance()
        }
        if let part = reader.peek, let size = try size(part) {
            (request.flipsHorizontally, request.width, request.flipsVertically, request.height) = size
            reader.advance()
        }
        if let part = reader.peek, let alignment = ThumbnailRequest.HorizontalAlignment(rawValue: String(part)) {
            request.horizontalAlignment = alignment
            reader.advance()
        }
        if let part = reader.peek, let alignment = ThumbnailRequest.VerticalAlignment(rawValue: String(part)) {
            request.verticalAlignment = alignment
            reader.advance()
        }
        if reader.peek == "smart" {
            request.isSmart = true
            reader.advance()
        }
        if let part = reader.peek, part.hasPrefix("filters:") {
            request.filters = try ThumborFilters.parse(part.dropFirst("filters:".count))
            reader.advance()
        }
        request.source = try source(reader.remainder)
        return Parsed(signature: signature, signedPart: signedPart, request: request)
    }

    /// `AxB:CxD`, or `nil` when the part is not shaped like one.
    private static func sourceCrop(_ part: Substring) throws(ServiceError) -> ThumbnailRequest.SourceCrop? {
        let corners = part.split(separator: ":", omittingEmptySubsequences: false)
        guard corners.count == 2 else { return nil }
        let numbers = corners.flatMap { $0.split(separator: "x", omittingEmptySubsequences: false) }
        guard numbers.count == 4, numbers.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) }) else { return nil }
        let values = numbers.compactMap { Int($0) }
        guard values.count == 4, values.allSatisfy({ $0 <= 1 << 20 }) else {
            throw .badRequest("crop \(part) is out of range")
        }
        guard values[2] > values[0], values[3] > values[1] else {
            throw .badRequest("crop \(part) has no area")
        }
        return .init(left: values[0], top: values[1], right: values[2], bottom: values[3])
    }

    /// `[-]WxH[-]` with `W` and `H` digits, `orig` or nothing; `nil` when the part is not shaped like one.
    private static func size(_ part: Substring) throws(ServiceError)
        -> (Bool, ThumbnailRequest.Side, Bool, ThumbnailRequest.Side)? {
        let sides = part.split(separator: "x", maxSplits: 1, omittingEmptySubsequences: false)
        guard sides.count == 2 else { return nil }
        func side(_ text: Substring) throws(ServiceError) -> (Bool, ThumbnailRequest.Side)? {
            let flips = text.hasPrefix("-")
            let value = flips ? text.dropFirst() : text
            if value.isEmpty { return (flips, .proportional) }
            if value == "orig" { return (flips, .original) }
            guard value.allSatisfy(\.isASCIIDigit) else { return nil }
            guard let pixels = Int(value), pixels <= 1 << 20 else { throw .badRequest("size \(part) is out of range") }
            return (flips, pixels == 0 ? .proportional : .pixels(pixels))
        }
        guard let width = try side(sides[0]), let height = try side(sides[1]) else { return nil }
        return (width.0, width.1, height.0, height.1)
    }

    /// The source URL: percent-decoded, `http://` added when there is no scheme, and a slash a proxy may have
    /// merged (`http:/host`) put back.
    private static func source(_ raw: Substring) throws(ServiceError) -> String {
        guard !raw.isEmpty else { throw .badRequest("no source image") }
        guard var source = PercentEncoding.decode(raw), !source.isEmpty else {
            throw .badRequest("the source is not valid percent-encoding")
        }
        for scheme in ["http:", "https:"] where source.hasPrefix(scheme + "/") && !source.hasPrefix(scheme + "//") {
            source = scheme + "/" + source.dropFirst(scheme.count)
        }
        if !source.hasPrefix("http://") && !source.hasPrefix("https://") {
            guard !source.contains("://") else { throw .badRequest("only http and https sources are supported") }
            source = "http://" + source
        }
        return source
    }
}

/// Reads a path one `/`-separated part at a time; what is left at the end is the source, slashes and all.
private struct PartReader {
    private var rest: Substring

    init(_ path: Substring) { rest = path }

    /// The next part, if a slash follows it (the last part is always the source).
    var peek: Substring? {
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        return rest[..<slash]
    }

    mutating func advance() {
        guard let slash = rest.firstIndex(of: "/") else { return }
        rest = rest[rest.index(after: slash)...]
    }

    var remainder: Substring { rest }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
