import Foundation
import ImagePipelineKit
import NIOHTTP1

/// Conditional `GET` (RFC 9110 §13): whether a request's `If-None-Match` or `If-Modified-Since` lets the origin
/// answer `304 Not Modified` instead of sending the body again.
enum OriginConditional {
    /// Whether `headers` make the request's answer a `304` for a representation with `etag` and `lastModified`.
    ///
    /// `If-None-Match` decides when present: a `304` when one of its tags (or `*`) matches `etag` by weak
    /// comparison (`W/` ignored). Without it, `If-Modified-Since` gives a `304` when the representation has not
    /// changed since that date. A representation without the validator asked about never matches.
    static func isNotModified(_ headers: HTTPHeaders, etag: String?, lastModified: Date?) -> Bool {
        let noneMatch = headers[canonicalForm: "If-None-Match"]
        if !noneMatch.isEmpty {
            guard let etag else { return false }
            let current = opaqueTag(etag)
            return noneMatch.contains { tag in tag == "*" || opaqueTag(String(tag)) == current }
        }
        guard let since = headers.first(name: "If-Modified-Since").flatMap(HTTPDate.parse), let lastModified else {
            return false
        }
        return lastModified <= since
    }

    /// The tag without its weakness marker, for weak comparison.
    private static func opaqueTag(_ tag: String) -> String {
        let trimmed = tag.trimmingCharacters(in: .whitespaces)
        return trimmed.hasPrefix("W/") ? String(trimmed.dropFirst(2)) : trimmed
    }
}
