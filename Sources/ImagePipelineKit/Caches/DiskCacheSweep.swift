import Foundation

/// The disk cache's hygiene, once per open, in the background: index rows that are expired, whose file is gone
/// or was replaced, or that are partials no larger than their complete image; then files no row names
/// (leftovers of writes a crash interrupted, or strays). It works in batches, taking the disk lock for one
/// batch at a time, so a large cache stays usable while it runs; the directory is listed outside the lock.
///
/// Other processes may use the same directory: each batch also holds the index's write lock, under which a
/// writer renames its file and records its row, so a file renamed a moment ago is never taken for a stray nor
/// its row for a stale one; and a write file (not yet renamed) is left alone unless it is old enough to be a
/// crash's leftover rather than a write in progress.
private struct DiskCacheSweep: Sendable {
    static let batchSize = 256
    /// A write file older than this is a leftover: no write takes anywhere near as long.
    static let abandonedWriteAge: TimeInterval = 600
    weak var cache: DiskCache?
    let pool: DiskCachePool
    let fileSystem: any CacheFileSystem
    let directory: String

    func run(now: Date = Date()) {
        var after: Int64 = 0
        // nil: no rows left, or the cache was released.
        while let last = pool.withLock({ () -> Int64? in
            guard let cache else { return nil }
            return try? cache.index.holdingWriteLock {
                cache._locked_removeFalseEntries(afterRow: after, limit: Self.batchSize, now: now)
            }
        }) {
            after = last
        }
        let names = fileSystem.contentsOfDirectory(directory).filter { name in
            guard name.hasPrefix(DiskCache.writeFileNamePrefix) else { return !DiskCache.isReservedFileName(name) }
            let modified = fileSystem.modificationDate(of: directory + "/" + name)
            return modified.map { now.timeIntervalSince($0) > Self.abandonedWriteAge } ?? false
        }
        var start = 0
        while start < names.count {
            let batch = names[start..<min(start + Self.batchSize, names.count)]
            let stillOpen = pool.withLock { () -> Bool in
                guard let cache else { return false }
                try? cache.index.holdingWriteLock {
                    for name in batch where !cache._locked_indexNames(name) && !cache._locked_isSpareFile(name) {
                        fileSystem.remove(directory + "/" + name)
                    }
                }
                return true
            }
            guard stillOpen else { return }
            start += Self.batchSize
        }
    }
}

extension DiskCache {
    /// Starts the background sweep (see ``DiskCacheSweep``). It holds the cache weakly: releasing the cache
    /// gives its totals back at once and stops the sweep.
    func startSweep(fileSystem: any CacheFileSystem) {
        let sweep = DiskCacheSweep(cache: self, pool: pool, fileSystem: fileSystem, directory: directory)
        DispatchQueue.global(qos: .utility).async { sweep.run() }
    }

    /// Whether a row names the file `name`.
    func _locked_indexNames(_ name: String) -> Bool {
        index.namesFile(name)
    }

    /// Checks up to `limit` rows after `afterRow` (SQLite rowid order) and deletes the false ones: expired,
    /// file missing or replaced (reported as corrupt), or a partial no larger than the complete image.
    /// Returns the last rowid checked, `nil` when there were no more rows.
    func _locked_removeFalseEntries(afterRow: Int64, limit: Int, now: Date) -> Int64? {
        let rows = index.rows(after: afterRow, limit: limit)
        for row in rows {
            let lastAccess = pendingTouches[row.key] ?? row.lastAccess
            if now.timeIntervalSince(lastAccess) > row.ttl {
                _locked_delete(row.key)
            } else if fileSystem.inode(of: path(fileName(row.key))) != row.inode {
                _locked_discardCorrupt(row.key, reason: "the file is missing or was replaced after its index entry was written")
            } else if row.key.partial,
                      let complete = try? _locked_row(EntryKey(identifier: row.key.identifier, partial: false)),
                      (complete.dimensions?.area ?? 0) >= row.area {
                _locked_delete(row.key)
            }
        }
        return rows.last?.rowid
    }
}
