/// A request's target (`/path?query`) split, percent-decoded and checked before it names a route or a file.
///
/// Rejected with `400`: a target that is not origin-form (absolute URLs, `*`, no leading `/`), invalid
/// percent-encoding, and any segment that is `..` or `.` or contains `/`, `\` or NUL once decoded — so
/// `/../x`, `/%2e%2e/x`, `/a/..%2fx` and `/%00` never reach the directory. What passes can only name a
/// path inside the served directory (symbolic links are checked again when the file is opened).
struct OriginRequestTarget: Equatable {
    /// The path as the client sent it (still percent-encoded), e.g. `/a%20b.jpg`.
    let rawPath: String
    /// The query after `?`, as sent, or `nil` when there is no `?`.
    let query: String?
    /// The decoded path, e.g. `/a b.jpg`: what routes, assets and files are looked up by.
    let path: String
    /// The decoded segments of ``path`` (empty ones dropped).
    let segments: [String]

    /// Why a target was refused.
    enum Rejection: Error, Equatable {
        case notOriginForm
        case badPercentEncoding
        case traversal
    }

    /// Splits `uri` (the request line's target) or tells why it must be refused.
    static func parse(_ uri: String) -> Result<OriginRequestTarget, Rejection> {
        guard uri.hasPrefix("/") else { return .failure(.notOriginForm) }
        let rawPath: String
        let query: String?
        if let mark = uri.firstIndex(of: "?") {
            rawPath = String(uri[..<mark])
            query = String(uri[uri.index(after: mark)...])
        } else {
            rawPath = uri
            query = nil
        }
        var segments: [String] = []
        for rawSegment in rawPath.split(separator: "/", omittingEmptySubsequences: true) {
            guard let segment = percentDecoded(rawSegment) else { return .failure(.badPercentEncoding) }
            if segment == ".." || segment == "." || segment.contains(where: { $0 == "/" || $0 == "\\" || $0 == "\0" }) {
                return .failure(.traversal)
            }
            segments.append(segment)
        }
        let path = "/" + segments.joined(separator: "/") + (rawPath.hasSuffix("/") && !segments.isEmpty ? "/" : "")
        return .success(OriginRequestTarget(rawPath: rawPath, query: query, path: path, segments: segments))
    }

    /// Decodes `%XX` escapes (UTF-8); `nil` for a truncated or non-hex escape or bytes that are not UTF-8.
    static func percentDecoded<S: StringProtocol>(_ text: S) -> String? {
        guard text.contains("%") else { return String(text) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
