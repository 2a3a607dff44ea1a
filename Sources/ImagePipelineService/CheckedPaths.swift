import Foundation
import PipelineLocking
import ThumborURLs

/// A thumbor path that parsed, whose signature is valid (or that may be unsafe), and whose source the allow-list
/// lets be fetched: everything the result cache's key and a render need from the path.
struct CheckedPath: Sendable {
    var thumbnail: ThumbnailRequest
    var source: URL
    /// The source's host, for the log line.
    var sourceHost: String?
    /// The result cache's key for each format the answer can take (``ThumbnailRenderer/FormatChoice/cacheKeyPart``):
    /// one with a `format()` filter, one per outcome of `Accept` without. Made once, since each is a digest.
    private var resultKeys: [String: String]

    init(thumbnail: ThumbnailRequest, source: URL) {
        self.thumbnail = thumbnail
        self.source = source
        sourceHost = source.host
        let canonical = thumbnail.canonicalDescription
        typealias Choice = ThumbnailRenderer.FormatChoice
        // Without `format()`: a newer format `Accept` may choose, or the source's own.
        let parts = thumbnail.filters.format.map { [Choice.explicit($0).cacheKeyPart] }
            ?? OutputFormat.newerFormats.map { Choice.negotiatedKeyPart($0) } + [Choice.negotiatedKeyPart(nil)]
        resultKeys = Dictionary(uniqueKeysWithValues: parts.map { ($0, ResultCache.key(for: canonical + "|" + $0)) })
    }

    /// The result cache's key of the rendering in the format `choice` gives.
    func resultKey(_ choice: ThumbnailRenderer.FormatChoice) -> String {
        let part = choice.cacheKeyPart
        return resultKeys[part] ?? ResultCache.key(for: thumbnail.canonicalDescription + "|" + part)
    }
}

/// Paths checked before: a thumbnail asked for again and again is parsed, verified and matched against the
/// allow-list once, not on every request.
///
/// A check depends only on the path and the service's configuration, which does not change while the service
/// runs, so a remembered answer stays right. Only paths that passed are kept (a refusal is checked again, and
/// costs what it did). Bounded: when `capacity` paths are kept, the next new one starts the memory afresh.
final class CheckedPaths: Sendable {
    private let paths = Locked<[String: CheckedPath]>([:])
    private let capacity: Int

    init(capacity: Int = 4_096) {
        self.capacity = capacity
    }

    /// The remembered check of `path`, or `check`'s answer, remembered when it passed.
    func checked(_ path: String, by check: (String) throws(ServiceError) -> CheckedPath) throws(ServiceError) -> CheckedPath {
        if let known = paths.withLock({ $0[path] }) { return known }
        let checked = try check(path)
        paths.withLock { paths in
            if paths.count >= capacity { paths.removeAll(keepingCapacity: true) }
            paths[path] = checked
        }
        return checked
    }
}
