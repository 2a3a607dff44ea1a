import Foundation

/// Writing entries: stores, the write of a file and its row, deletes, and the files of deleted entries kept for
/// the next writes to write over.
extension DiskCache {
    /// Stores complete image bytes under TIP's replacement rules (``MemoryCache`` has the same);
    /// `forced` (a store operation of a real image) replaces whatever is there, and `replacesSameURL` (a
    /// download under ``CacheFreshnessPolicy/http``) an image of the same URL whatever its size. A complete
    /// image at least as large as the partial replaces the partial. Returns whether the bytes are now on disk.
    @discardableResult
    public func storeComplete(_ image: CachedImageData, identifier: String, forced: Bool = false,
                              replacesSameURL: Bool = false) -> Bool {
        DelegateQueueDiagnostics.noteHeavyWork()
        guard !image.data.isEmpty else { return false }
        let key = EntryKey(identifier: identifier, partial: false)
        var row = Row(url: image.url, dimensions: image.dimensions, bytes: image.data.count, lastAccess: image.lastAccess,
                      ttl: image.timeToLive, updatesExpiry: image.updatesExpiryOnAccess, lastModified: nil,
                      entityTag: nil, expectedLength: 0, placeholder: image.isPlaceholder, animated: image.isAnimated)
        row.httpMetadata = image.httpMetadata
        let replaces: (Row?) -> Bool = { existing in
            guard !forced, let existing else { return true }
            return MemoryCache.completeShouldReplace(existing.cachedImage(Data(), lastAccess: existing.lastAccess), with: image,
                                                     replacesSameURL: replacesSameURL)
        }
        return write(image.data, row: row, key: key, if: replaces) { [self] in
            let partial = EntryKey(identifier: identifier, partial: true)
            if let old = try? _locked_row(partial), (old.dimensions?.area ?? 0) <= image.dimensions.area {
                _locked_delete(partial)
            }
        }
    }

    /// Stores a partial download for resuming, unless a complete image at least as large is already there.
    @discardableResult
    public func storePartial(_ partial: PartialImageData, identifier: String) -> Bool {
        DelegateQueueDiagnostics.noteHeavyWork()
        guard !partial.data.isEmpty else { return false }
        let row = Row(url: partial.url, dimensions: partial.dimensions, bytes: partial.data.count,
                      lastAccess: partial.lastAccess, ttl: partial.timeToLive, updatesExpiry: partial.updatesExpiryOnAccess,
                      lastModified: partial.lastModified, entityTag: partial.entityTag,
                      expectedLength: partial.expectedByteCount, placeholder: false, animated: false)
        let noLargerComplete: (Row?) -> Bool = { [self] _ in
            guard let complete = try? _locked_row(EntryKey(identifier: identifier, partial: false)) else { return true }
            return (complete.dimensions?.area ?? 0) < (partial.dimensions?.area ?? 0)
        }
        return write(partial.data, row: row, key: EntryKey(identifier: identifier, partial: true), if: noLargerComplete) {}
    }

    /// Writes an entry: temp file, then in one index transaction the rename over the entry's file, its row
    /// (with the new inode and the bytes' checksum), `published` and the pool's pruning, when `accepts` (called
    /// holding the lock, with the entry's current row) says the bytes belong there. Returns whether the entry
    /// is on disk.
    ///
    /// The temp file is written without the pool's lock, since every disk cache of the process, reads
    /// included, waits for that lock. It is a deleted entry's file when one is kept (see
    /// ``_locked_keepSpareFile(_:bytes:)``), else a new one. Its name is unique to this write, so nothing else
    /// in the process touches it meanwhile, and the sweeps of other processes leave young write files alone.
    /// Since another store may land during the write, `accepts` is asked again before the rename.
    ///
    /// The file is not flushed (`fsync`) before its row is recorded: the flush cost a fetch more CPU than
    /// anything but its decode, and held its operation slot while the disk wrote. What the flush guarded
    /// against, a power cut leaving a recorded file short or garbled, the checksum catches on read instead.
    func write(_ data: Data, row: Row, key: EntryKey, if accepts: (Row?) -> Bool, published: () -> Void) -> Bool {
        let writeFile = withLockAsIndexWork { () -> String? in
            guard accepts(try? _locked_row(key)) else { return nil }
            let limits = pool._locked_limits()
            guard data.count <= limits.maxEntryBytes, limits.maxBytes > 0 else {
                pool._locked_report(.imageTooLargeToStoreInDiskCache(identifier: key.identifier, bytes: data.count))
                return nil
            }
            return spareFiles.popLast()?.path ?? path(Self.newWriteFileName())
        }
        guard let temporary = writeFile else { return false }
        do {
            try fileSystem.write(data, to: temporary)
        } catch {
            fileSystem.remove(temporary)
            pool.withLock { pool._locked_report(.diskCacheWriteFailed(identifier: key.identifier, error: error)) }
            return false
        }
        var row = row
        row.checksum = ContentChecksum.of(data)
        return withLockAsIndexWork {
            // One transaction from the check to the pruning: another process cannot store this entry between
            // `accepts` and the rename, and the lookups and deletes share the write's hold of the index instead
            // of taking it each on their own.
            do {
                return try index.holdingWriteLock { () -> Bool in
                    let old = try? _locked_row(key)
                    guard accepts(old), _locked_publish(temporary, row: row, key: key, replacing: old) else {
                        fileSystem.remove(temporary)
                        return false
                    }
                    published()
                    // Pruning may have evicted the new entry itself (an image larger than the room left).
                    return !pool._locked_prune(priority: owner) || (try? _locked_row(key)) != nil
                }
            } catch {
                // The transaction could not begin (another process held the index past the busy timeout) or
                // commit (a full disk), and nothing of it is recorded: the totals are counted again.
                fileSystem.remove(temporary)
                _locked_recountTotals()
                pool._locked_report(.diskCacheWriteFailed(identifier: key.identifier,
                                                          error: error as? DiskCacheError ?? .index("\(error)")))
                return false
            }
        }
    }

    /// Gives the pool this cache's totals as the index has them, after a transaction that adjusted them in memory
    /// was rolled back.
    private func _locked_recountTotals() {
        guard let (bytes, count) = try? index.totals() else { return }
        pool._locked_register(self, owner: owner, bytes: bytes, count: count)
    }

    /// `pool.withLock`, its CPU time counted as the ``PipelineStage/diskIndex`` stage of a measured disk write.
    private func withLockAsIndexWork<T>(_ body: () throws -> T) rethrows -> T {
        try PipelineStage.diskIndex.measuringWithinStage { try pool.withLock(body) }
    }

    /// Renames a written temp file over `key`'s file and records its row in place of `old`. Called inside the
    /// write's transaction, so the rename and the row are under one hold of the index's write lock: another
    /// process reading this entry sees the old file with the old row or the new file with the new row (see
    /// `_locked_read`).
    private func _locked_publish(_ temporary: String, row: Row, key: EntryKey, replacing old: Row?) -> Bool {
        let name = fileName(key)
        var row = row
        do {
            try fileSystem.rename(temporary, to: path(name))
            row.inode = fileSystem.inode(of: path(name)) ?? 0
            // If this fails, the file is the new one but the index keeps the old row: the inode check catches it
            // on read.
            try index.upsert(row, key: key, file: name)
        } catch {
            pool._locked_report(.diskCacheWriteFailed(identifier: key.identifier, error: error))
            return false
        }
        pendingTouches[key] = nil
        pool._locked_adjust(owner: owner, bytes: row.bytes - (old?.bytes ?? 0), count: old == nil ? 1 : 0)
        return true
    }

    func _locked_delete(_ key: EntryKey) {
        guard let row = try? _locked_row(key) else { return }
        // The file leaves its entry's name at once (a rename is quick), for a write file's name: it is kept
        // for the next write to write over, or unlinked after the lock is released (see
        // `DiskCachePool.withLock`). The sweep removes it if the process ends first.
        let entryPath = path(fileName(key))
        let doomed = path(Self.newWriteFileName())
        if (try? fileSystem.rename(entryPath, to: doomed)) != nil {
            _locked_keepSpareFile(doomed, bytes: row.bytes)
        } else {
            fileSystem.remove(entryPath)
        }
        try? index.delete(key)
        pendingTouches[key] = nil
        pool._locked_adjust(owner: owner, bytes: -row.bytes, count: -1)
    }

    // MARK: - Files kept to be written over

    /// A new write file's name, unique to one write.
    static func newWriteFileName() -> String {
        writeFileNamePrefix + "\(UInt64.random(in: 0...UInt64.max))"
    }

    /// The most deleted entries' files one cache keeps for its next writes.
    static let maxSpareFiles = 8

    /// Keeps a deleted entry's file, already under a write file's name, for the next write to write over, or
    /// has it unlinked after the lock is released when enough are kept: at most ``maxSpareFiles``, together
    /// no larger than 1/64 of the disk limit.
    ///
    /// A cache that is full deletes an entry for every one it writes. Writing over the deleted one's file
    /// saves creating a file and unlinking one: on ext4 without a journal, creating a file scans past every
    /// inode freed in the last minute or more, which cost more CPU than the rest of the write together.
    func _locked_keepSpareFile(_ path: String, bytes: Int) {
        let keptBytes = spareFiles.reduce(0) { $0 + $1.bytes }
        if spareFiles.count < Self.maxSpareFiles, keptBytes + bytes <= pool._locked_limits().maxBytes / 64 {
            // A deleted entry's file may be years old: made young, it is not taken for a crash's leftover by
            // the sweep of another process opening the same directory.
            fileSystem.markModified(path)
            spareFiles.append((path, bytes))
        } else {
            pool._locked_removeAfterUnlock(path, fileSystem: fileSystem)
        }
    }

    /// Whether `name` is a deleted entry's file this cache keeps to write over (the sweep leaves those alone).
    func _locked_isSpareFile(_ name: String) -> Bool {
        spareFiles.contains { $0.path == path(name) }
    }

    /// Has every kept file unlinked after the lock is released.
    func _locked_removeSpareFiles() {
        for spare in spareFiles { pool._locked_removeAfterUnlock(spare.path, fileSystem: fileSystem) }
        spareFiles = []
    }
}
