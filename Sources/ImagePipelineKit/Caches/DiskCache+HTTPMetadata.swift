import Foundation

// What the disk cache keeps of the responses that brought its images, for ``CacheFreshnessPolicy/http``:
// read without touching the image's file, and refreshed in place when the origin confirms the image.
extension DiskCache {
    /// The URL and response metadata of `identifier`'s complete image, from the index alone (no file read, no
    /// last-access update): `nil` when there is none or it expired (then deleted). For deciding whether the
    /// image is fresh before reading it.
    public func completeEntryMetadata(for identifier: String, now: Date = Date()) -> (url: URL, metadata: HTTPCacheMetadata?)? {
        pool.withLock {
            _locked_unexpiredRow(EntryKey(identifier: identifier, partial: false), now: now).map { ($0.url, $0.httpMetadata) }
        }
    }

    /// Replaces the response metadata of `identifier`'s complete image of `url` (a `304` confirmed it) and
    /// counts the confirmation as an access. Returns `false` when there is no such image (it was replaced or
    /// removed meanwhile) or the index refused the write.
    @discardableResult
    public func refreshMetadata(_ metadata: HTTPCacheMetadata, identifier: String, url: URL, now: Date = Date()) -> Bool {
        pool.withLock {
            let key = EntryKey(identifier: identifier, partial: false)
            guard let row = try? _locked_row(key), row.url == url else { return false }
            do throws(DiskCacheError) {
                try index.updateHTTPMetadata(metadata, lastAccess: row.updatesExpiry ? now : row.lastAccess, key: key)
            } catch {
                pool._locked_report(.diskCacheWriteFailed(identifier: identifier, error: error))
                return false
            }
            pendingTouches[key] = nil
            return true
        }
    }
}
