import Foundation
import ImagePipelineKit

/// What a request's `Range` and `If-Range` ask of a body of known length (RFC 9110 §14).
///
/// Only single byte ranges are served as `206`; a multi-range request, another unit or a malformed header is
/// ignored (a `200` with the whole body, which RFC 9110 allows).
enum OriginByteRange: Equatable {
    /// Send the whole body with `200`.
    case full
    /// Send these bytes with `206` and `Content-Range: bytes first-last/length`.
    case partial(Range<Int>)
    /// Send `416` with `Content-Range: bytes */length`.
    case unsatisfiable

    /// Evaluates `range` (the header's value) against a body of `length` bytes.
    static func evaluate(_ range: String?, length: Int) -> OriginByteRange {
        guard let range else { return .full }
        let trimmed = range.trimmingCharacters(in: .whitespaces)
        guard let equals = trimmed.firstIndex(of: "="),
              trimmed[..<equals].trimmingCharacters(in: .whitespaces).lowercased() == "bytes"
        else { return .full }
        let spec = trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .full }
        let firstText = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let lastText = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        func number(_ text: String) -> Int? {
            guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int(text) ?? Int.max  // more digits than an Int holds: beyond any body
        }
        if firstText.isEmpty {
            // bytes=-N: the last N bytes.
            guard let suffix = number(lastText) else { return .full }
            guard suffix > 0, length > 0 else { return .unsatisfiable }
            return .partial(max(0, length - suffix)..<length)
        }
        guard let first = number(firstText) else { return .full }
        if lastText.isEmpty {
            return first < length ? .partial(first..<length) : .unsatisfiable
        }
        guard let last = number(lastText), last >= first else { return .full }
        guard first < length else { return .unsatisfiable }
        return .partial(first..<(min(last, length - 1) + 1))
    }

    /// Whether an `If-Range` validator still matches the representation, so the range may be honoured.
    ///
    /// An entity tag must match `etag` by strong comparison (a weak tag never does); a date must equal
    /// `lastModified` to the second. With no `If-Range` header the range is always allowed; with a
    /// validator the server does not send (see ``OriginFault/noValidators``) it never is.
    static func ifRangeAllows(_ ifRange: String?, etag: String?, lastModified: Date?) -> Bool {
        guard let ifRange = ifRange?.trimmingCharacters(in: .whitespaces) else { return true }
        if ifRange.hasPrefix("\"") || ifRange.hasPrefix("W/") {
            guard let etag, !etag.hasPrefix("W/"), !ifRange.hasPrefix("W/") else { return false }
            return etag == ifRange
        }
        guard let lastModified, let date = HTTPDate.parse(ifRange) else { return false }
        return date.timeIntervalSince1970.rounded(.down) == lastModified.timeIntervalSince1970.rounded(.down)
    }
}
