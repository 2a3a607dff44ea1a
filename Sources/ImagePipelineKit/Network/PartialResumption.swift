import Foundation

// When a download may go on from bytes its fetches already have (a partial kept from an earlier download, or a
// suspended download's bytes): the validator its `Range` request is sent with, and whether the server's answer
// continues those bytes or is a version of its own. A server that ignores `If-Range` can answer with a range of
// a file that changed since; appending it would splice two different images into one.
extension PartialImageData {
    /// The `If-Range` value to resume with: a strong ETag (TIP never used one), else Last-Modified when it is an
    /// HTTP-date; `nil` when neither can validate a range. `If-Range` holds an entity tag or a date, so a server
    /// reads any other text it is sent as a tag: a `Last-Modified` of `"v2"` would then validate a range of
    /// whichever version has that ETag.
    var ifRangeValidator: String? {
        if let tag = entityTag, !tag.hasPrefix("W/"), !tag.isEmpty { return tag }
        if let date = lastModified, HTTPDate.parse(date) != nil { return date }
        return nil
    }

    /// Whether a `206` continues these bytes: it starts where they stop, declares their total, and any
    /// validator it sends is theirs.
    func isContinued(by response: DownloadResponse) -> Bool {
        guard response.contentRangeStart == data.count else { return false }
        if let total = response.contentRangeTotal, total != expectedByteCount { return false }
        if let tag = response.headers["ETag"], let kept = entityTag, tag != kept { return false }
        if let date = response.headers["Last-Modified"], let kept = lastModified, date != kept { return false }
        return true
    }

    /// Whether a whole-image answer (`200`) is the version these bytes are: it carries their validators.
    func isSameVersion(as response: DownloadResponse) -> Bool {
        if let kept = entityTag { return response.headers["ETag"] == kept }
        if let kept = lastModified { return response.headers["Last-Modified"] == kept }
        return false
    }
}

extension DownloadResponse {
    /// `N` of `Content-Range: bytes N-M/T`.
    var contentRangeStart: Int? {
        guard let range = headers["Content-Range"], range.lowercased().hasPrefix("bytes ") else { return nil }
        return Int(range.dropFirst(6).prefix { $0 != "-" })
    }

    /// `T` of `Content-Range: bytes N-M/T` (`nil` for `*`).
    var contentRangeTotal: Int? {
        guard let range = headers["Content-Range"], let slash = range.lastIndex(of: "/") else { return nil }
        return Int(range[range.index(after: slash)...])
    }
}
