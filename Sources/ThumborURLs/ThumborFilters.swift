import Foundation
import ImagePipelineKit

/// thumbor's `filters:name(args):name(args)` part: the supported filters, and a 400 naming any other.
enum ThumborFilters {
    /// Parses what follows `filters:`.
    static func parse(_ text: Substring) throws(ServiceError) -> ThumbnailFilters {
        var filters = ThumbnailFilters()
        for call in try calls(text) {
            switch call.name {
            case "format":
                guard let format = OutputFormat(rawValue: call.argument.lowercased() == "jpg" ? "jpeg" : call.argument.lowercased()) else {
                    throw .badRequest("format(\(call.argument)) is not jpeg, png, webp, avif or gif")
                }
                filters.format = format
            case "quality":
                guard let quality = Int(call.argument), (0...100).contains(quality) else {
                    throw .badRequest("quality(\(call.argument)) is not 0...100")
                }
                filters.quality = quality
            case "no_upscale":
                try requireNoArgument(call)
                filters.preventsUpscaling = true
            case "strip_exif", "strip_icc":
                // Outputs never carry EXIF or ICC data: the orientation is applied to the pixels, and the
                // encoders write none. The filters are accepted so that thumbor URLs keep working.
                try requireNoArgument(call)
            case "fill":
                guard let color = color(call.argument) else {
                    throw .badRequest("fill(\(call.argument)) is not a hex colour, a colour name or transparent")
                }
                filters.fill = color
            case "max_bytes":
                guard let bytes = Int(call.argument), bytes > 0 else {
                    throw .badRequest("max_bytes(\(call.argument)) is not a positive number")
                }
                filters.maxBytes = bytes
            default:
                throw .badRequest("filter \(call.name) is not supported")
            }
        }
        return filters
    }

    private struct Call {
        var name: Substring
        var argument: String
    }

    /// `name(argument)` pieces separated by `:` outside parentheses.
    private static func calls(_ text: Substring) throws(ServiceError) -> [Call] {
        var calls: [Call] = []
        var rest = text
        while !rest.isEmpty {
            guard let open = rest.firstIndex(of: "("), let close = rest[open...].firstIndex(of: ")") else {
                throw .badRequest("filter \(rest) has no (arguments)")
            }
            let name = rest[..<open]
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0 == "_" }) else {
                throw .badRequest("filter name \(name) is not valid")
            }
            let argument = rest[rest.index(after: open)..<close]
            calls.append(Call(name: name, argument: PercentEncoding.decode(argument) ?? String(argument)))
            rest = rest[rest.index(after: close)...]
            if rest.first == ":" { rest = rest.dropFirst() } else if !rest.isEmpty {
                throw .badRequest("filters must be separated by ':'")
            }
        }
        return calls
    }

    private static func requireNoArgument(_ call: Call) throws(ServiceError) {
        guard call.argument.isEmpty else { throw .badRequest("\(call.name)() takes no argument") }
    }

    private static let namedColors: [String: RGBA] = [
        "white": RGBA(r: 255, g: 255, b: 255, a: 255), "black": RGBA(r: 0, g: 0, b: 0, a: 255),
        "red": RGBA(r: 255, g: 0, b: 0, a: 255), "green": RGBA(r: 0, g: 128, b: 0, a: 255),
        "blue": RGBA(r: 0, g: 0, b: 255, a: 255), "gray": RGBA(r: 128, g: 128, b: 128, a: 255),
        "grey": RGBA(r: 128, g: 128, b: 128, a: 255), "transparent": RGBA(r: 0, g: 0, b: 0, a: 0),
    ]

    /// `rgb`/`rrggbb` hex (with or without `#`, which a URL carries as `%23`), or a few names. thumbor's
    /// `auto` and `blur` fills are not supported.
    static func color(_ text: String) -> RGBA? {
        let lowered = text.lowercased()
        if let named = namedColors[lowered] { return named }
        var hex = lowered.hasPrefix("#") ? String(lowered.dropFirst()) : lowered
        if hex.count == 3 { hex = hex.map { "\($0)\($0)" }.joined() }
        guard hex.count == 6, hex.allSatisfy(\.isHexDigit), let value = UInt32(hex, radix: 16) else { return nil }
        return RGBA(r: UInt8(value >> 16 & 0xFF), g: UInt8(value >> 8 & 0xFF), b: UInt8(value & 0xFF), a: 255)
    }
}
