import Foundation

/// Encoded images of one pipeline on disk: one file per complete image and per partial download, metadata in
/// an SQLite index (TIP's disk cache, with its failure modes fixed).
///
/// - Files are named by ``SafeFileName`` (partials add `%tmp`, which no safe name can contain), so no
///   identifier can point outside ``directory``. The index lives in `%index.sqlite` for the same reason.
/// - A write goes to a temporary file, is flushed, renamed over the entry's file, and only then recorded in
///   the index with the file's inode and size. A crash at any moment leaves either the old entry or the new
///   one; a file that does not match its row (replaced, truncated, missing) is detected on read, removed and
///   reported as ``ImagePipelineProblem/diskCacheEntryCorrupt(identifier:reason:)``.
/// - A failed write (a full disk) removes only its temporary file: the entry that was there stays.
/// - Opening reads totals from the index, never scans the directory; leftovers of crashed writes are removed
///   in the background. Last-access updates are batched.
///
/// Thread-safe: every method takes the disk caches' lock (shared by all pipelines, as TIP's disk queue is).
/// Do not call it from the delegate queue.
public final class DiskCache: @unchecked Sendable {
    // @unchecked: `index`, `pendingTouches` and the files are used only under `pool`'s lock (a write's own temp
    // file aside, see `write(_:row:key:if:published:)`).

    /// The pipeline's directory.
    public let directory: String
    let owner: String
    let pool: DiskCachePool
    let fileSystem: any CacheFileSystem
    let index: DiskCacheIndex
    var pendingTouches: [EntryKey: Date] = [:]
    private var removesDirectory = false
    /// Touches kept in memory before one transaction writes them.
    static let touchBatchSize = 64

    typealias EntryKey = DiskCacheIndex.Key
    typealias Row = DiskCacheIndex.Row

    /// Opens (creating) the cache in `directory`.
    /// - Throws: ``DiskCacheError`` when the directory or the index cannot be created or opened.
    init(directory: String, owner: String, pool: DiskCachePool, fileSystem: any CacheFileSystem = POSIXCacheFileSystem()) throws {
        self.directory = directory
        self.owner = owner
        self.pool = pool
        self.fileSystem = fileSystem
        try fileSystem.createDirectory(directory)
        index = try DiskCacheIndex(path: directory + "/%index.sqlite")
        let (bytes, count) = try index.totals()
        pool.withLock {
            pool._locked_register(self, owner: owner, bytes: bytes, count: count)
            // A crash between a write's commit and its pruning can leave the cache over the limits: enforce
            // them now, as TIP prunes after loading its manifest.
            pool._locked_prune(priority: nil)
        }
        startSweep(fileSystem: fileSystem)
    }

    deinit {
        pool.withLock {
            try? _locked_flushTouches()
            pool._locked_unregister(owner: owner)
            if removesDirectory, (try? index.totals().count) == 0 {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
    }

    /// Set by a cleared pipeline: when the cache is released still empty, its directory (index included) goes.
    public var removesDirectoryWhenReleasedEmpty: Bool {
        get { pool.withLock { removesDirectory } }
        set { pool.withLock { removesDirectory = newValue } }
    }

    // MARK: - Reading

    /// The unexpired parts of `identifier`'s entry, with their bytes. Expired parts are deleted; a part whose
    /// file does not match the index is deleted and reported.
    public func entry(for identifier: String, now: Date = Date()) -> CacheEntry? {
        DelegateQueueDiagnostics.noteHeavyWork()
        return pool.withLock {
            let entry = CacheEntry(
                complete: _locked_read(EntryKey(identifier: identifier, partial: false), now: now).map { row, data in
                    row.cachedImage(data, lastAccess: now)
                },
                partial: _locked_read(EntryKey(identifier: identifier, partial: true), now: now).map { row, data in
                    PartialImageData(data: data, url: row.url, dimensions: row.dimensions, expectedByteCount: row.expectedLength,
                                     lastModified: row.lastModified, entityTag: row.entityTag, timeToLive: row.ttl,
                                     updatesExpiryOnAccess: row.updatesExpiry, lastAccess: now)
                })
            return entry.isEmpty ? nil : entry
        }
    }

    /// The complete image of `identifier` without refreshing its last access (another pipeline looking, which
    /// must not move this pipeline's entry in its LRU order).
    public func peek(identifier: String, now: Date = Date()) -> CachedImageData? {
        DelegateQueueDiagnostics.noteHeavyWork()
        return pool.withLock {
            _locked_read(EntryKey(identifier: identifier, partial: false), now: now, touch: false).map { row, data in
                row.cachedImage(data, lastAccess: row.lastAccess)
            }
        }
    }

    /// What the index says of `identifier`'s complete image, without reading its file: `nil` when there is none
    /// or it expired (then deleted). Refreshes its last access as a read does; for tiers that hold the image in
    /// another form (``RenditionTables``) and only need to know the entry is still there and which it is.
    public func completeEntryInfo(for identifier: String, now: Date = Date()) -> DiskCacheEntryInfo? {
        pool.withLock {
            let key = EntryKey(identifier: identifier, partial: false)
            guard let row = _locked_unexpiredRow(key, now: now) else { return nil }
            if row.updatesExpiry { _locked_touch(key, at: now) }
            return DiskCacheEntryInfo(identifier: identifier, isPartial: false, url: row.url,
                                      dimensions: row.dimensions ?? PixelSize(width: 0, height: 0), bytes: row.bytes,
                                      progress: 1, isPlaceholder: row.placeholder)
        }
    }

    /// Files in the directory that are not entries: the index (`%index.sqlite*`) and rendition tables
    /// (`%renditions-*`). Entry file names never start so: their `%` is always followed by two hex digits.
    /// A file being written, renamed to its entry's name once complete.
    static let writeFileNamePrefix = "%write-"

    static func isReservedFileName(_ name: String) -> Bool {
        name.hasPrefix("%index.sqlite") || name.hasPrefix(RenditionTables.fileNamePrefix)
    }

    /// Metadata of every entry (no bytes read), most recently used first, for inspection.
    public var entries: [DiskCacheEntryInfo] {
        pool.withLock {
            try? _locked_flushTouches()
            return index.entryInfos()
        }
    }

    /// Bytes of all this cache's files.
    public var totalBytes: Int { pool.withLock { (try? index.totals().bytes) ?? 0 } }
    /// Entries (complete and partial parts counted separately).
    public var totalCount: Int { pool.withLock { (try? index.totals().count) ?? 0 } }

    // MARK: - Writing

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
        let replaces: () -> Bool = { [self] in
            guard !forced, let existing = try? _locked_row(key) else { return true }
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
        let noLargerComplete: () -> Bool = { [self] in
            guard let complete = try? _locked_row(EntryKey(identifier: identifier, partial: false)) else { return true }
            return (complete.dimensions?.area ?? 0) < (partial.dimensions?.area ?? 0)
        }
        return write(partial.data, row: row, key: EntryKey(identifier: identifier, partial: true), if: noLargerComplete) {}
    }

    /// Deletes both parts of `identifier`.
    public func remove(identifier: String) {
        pool.withLock {
            _locked_delete(EntryKey(identifier: identifier, partial: false))
            _locked_delete(EntryKey(identifier: identifier, partial: true))
        }
    }

    /// Deletes every entry.
    public func removeAll() {
        pool.withLock { _locked_removeAll() }
    }

    /// Moves `identifier`'s entry (both parts) to `newIdentifier`, replacing what `newIdentifier` had.
    /// - Throws: ``DiskCacheError/file(operation:errno:)`` with ENOENT when there is nothing to move.
    public func changeIdentifier(_ identifier: String, to newIdentifier: String) throws(DiskCacheError) {
        let failure: DiskCacheError? = pool.withLock {
            try? _locked_flushTouches()
            var moved = false
            for partial in [false, true] {
                let from = EntryKey(identifier: identifier, partial: partial), to = EntryKey(identifier: newIdentifier, partial: partial)
                guard (try? _locked_row(from)) != nil else { continue }
                _locked_delete(to)
                do throws(DiskCacheError) {
                    try fileSystem.rename(path(fileName(from)), to: path(fileName(to)))
                    try index.move(from, to: newIdentifier, file: fileName(to))
                    moved = true
                } catch {
                    // A partial that cannot move is dropped (TIP tolerates it); a complete one stays and the
                    // move fails.
                    guard partial else { return error }
                    _locked_delete(from)
                }
            }
            return moved ? nil : .file(operation: "move", errno: ENOENT)
        }
        if let failure { throw failure }
    }

    /// A copy of `identifier`'s complete image file in the temporary directory; the caller deletes it.
    /// - Throws: ``DiskCacheError/file(operation:errno:)`` with ENOENT when there is no valid complete entry.
    public func copyFile(identifier: String) throws(DiskCacheError) -> URL {
        guard let data = entry(for: identifier)?.complete?.data else { throw .file(operation: "copy", errno: ENOENT) }
        let destination = FileManager.default.temporaryDirectory
            .appendingPathComponent("ipk-copy-\(UUID().uuidString)-\(SafeFileName.make(for: identifier).prefix(64))")
        try fileSystem.write(data, to: destination.path)
        return destination
    }

    /// Writes pending last-access updates to the index now.
    public func flush() {
        pool.withLock { try? _locked_flushTouches() }
    }

    // MARK: - Under the lock

    func fileName(_ key: EntryKey) -> String {
        SafeFileName.make(for: key.identifier) + (key.partial ? "%tmp" : "")
    }

    func path(_ name: String) -> String { directory + "/" + name }

    /// The row of `key`, with its last access as this process last saw it (touches are written in batches).
    func _locked_row(_ key: EntryKey) throws -> Row? {
        guard var row = try index.row(key) else { return nil }
        if let pending = pendingTouches[key] { row.lastAccess = pending }
        return row
    }

    /// The row of `key`, or nil when there is none or it expired (then deleted).
    func _locked_unexpiredRow(_ key: EntryKey, now: Date) -> Row? {
        guard let row = try? _locked_row(key) else { return nil }
        guard now.timeIntervalSince(row.lastAccess) <= row.ttl else {
            _locked_delete(key)
            return nil
        }
        return row
    }

    /// The row and bytes of `key`, or nil (absent, expired, or not matching its file: then deleted).
    private func _locked_read(_ key: EntryKey, now: Date, touch: Bool = true, holdingWriteLock: Bool = false) -> (Row, Data)? {
        guard let row = _locked_unexpiredRow(key, now: now) else { return nil }
        let file: (data: Data, inode: UInt64)
        do {
            file = try fileSystem.read(path(fileName(key)))
        } catch {
            _locked_discardCorrupt(key, reason: "\(error)")
            return nil
        }
        if file.inode != row.inode, !holdingWriteLock {
            // Another process may be between renaming its new file and recording it, which it does holding the
            // index's write lock: look again holding the lock, so that only a mismatch no writer is about to
            // mend (a crash, an outside hand) counts as corrupt.
            return (try? index.holdingWriteLock { _locked_read(key, now: now, touch: touch, holdingWriteLock: true) }) ?? nil
        }
        guard file.inode == row.inode, file.data.count == row.bytes else {
            _locked_discardCorrupt(key, reason: file.inode != row.inode
                ? "the file was replaced after its index entry was written"
                : "the file holds \(file.data.count) bytes, the index says \(row.bytes)")
            return nil
        }
        if touch, row.updatesExpiry { _locked_touch(key, at: now) }
        return (row, file.data)
    }

    func _locked_discardCorrupt(_ key: EntryKey, reason: String) {
        _locked_delete(key)
        pool._locked_report(.diskCacheEntryCorrupt(identifier: key.identifier, reason: reason))
    }

    /// Writes an entry: temp file → fsync → rename over the entry's file → index row (with the new inode) in
    /// one transaction, then `published` and the pool's pruning, when `accepts` (called holding the lock) says
    /// the bytes belong there. Returns whether the entry is on disk.
    ///
    /// The temp file is written and flushed without the pool's lock: an fsync takes milliseconds, and every
    /// disk cache of the process, reads included, waits for that lock. The file's name is unique to this
    /// write and the sweep leaves young write files alone, so nothing else touches it meanwhile. Since
    /// another store may land during the write, `accepts` is asked again before the rename.
    private func write(_ data: Data, row: Row, key: EntryKey, if accepts: () -> Bool, published: () -> Void) -> Bool {
        let fits = pool.withLock { () -> Bool in
            guard accepts() else { return false }
            let limits = pool._locked_limits()
            guard data.count <= limits.maxEntryBytes, limits.maxBytes > 0 else {
                pool._locked_report(.imageTooLargeToStoreInDiskCache(identifier: key.identifier, bytes: data.count))
                return false
            }
            return true
        }
        guard fits else { return false }
        let temporary = path(Self.writeFileNamePrefix + "\(UInt64.random(in: 0...UInt64.max))")
        do {
            try fileSystem.write(data, to: temporary)
        } catch {
            fileSystem.remove(temporary)
            pool.withLock { pool._locked_report(.diskCacheWriteFailed(identifier: key.identifier, error: error)) }
            return false
        }
        return pool.withLock {
            guard accepts(), _locked_publish(temporary, row: row, key: key) else {
                fileSystem.remove(temporary)
                return false
            }
            published()
            pool._locked_prune(priority: owner)
            return (try? _locked_row(key)) != nil
        }
    }

    /// Renames a written temp file over `key`'s file and records its row.
    private func _locked_publish(_ temporary: String, row: Row, key: EntryKey) -> Bool {
        let name = fileName(key)
        let old = try? _locked_row(key)
        var row = row
        do {
            // The rename and the row under one hold of the write lock: another process reading this entry sees
            // the old file with the old row or the new file with the new row (see `_locked_read`).
            try index.holdingWriteLock {
                try fileSystem.rename(temporary, to: path(name))
                row.inode = fileSystem.inode(of: path(name)) ?? 0
                // If this fails, the file is the new one but the index keeps the old row: the inode check
                // catches it on read.
                try index.upsert(row, key: key, file: name)
            }
        } catch {
            pool._locked_report(.diskCacheWriteFailed(identifier: key.identifier,
                                                      error: error as? DiskCacheError ?? .index("\(error)")))
            return false
        }
        pendingTouches[key] = nil
        pool._locked_adjust(owner: owner, bytes: row.bytes - (old?.bytes ?? 0), count: old == nil ? 1 : 0)
        return true
    }

    func _locked_delete(_ key: EntryKey) {
        guard let row = try? _locked_row(key) else { return }
        // The file leaves its entry's name at once (a rename is quick) and is unlinked after the lock is
        // released (see `DiskCachePool.withLock`). Its new name is a write file's, which the sweep removes if
        // the process ends before the unlink.
        let entryPath = path(fileName(key))
        let doomed = path(Self.writeFileNamePrefix + "\(UInt64.random(in: 0...UInt64.max))")
        if (try? fileSystem.rename(entryPath, to: doomed)) != nil {
            pool._locked_removeAfterUnlock(doomed, fileSystem: fileSystem)
        } else {
            fileSystem.remove(entryPath)
        }
        try? index.delete(key)
        pendingTouches[key] = nil
        pool._locked_adjust(owner: owner, bytes: -row.bytes, count: -1)
    }

    private func _locked_touch(_ key: EntryKey, at date: Date) {
        pendingTouches[key] = date
        if pendingTouches.count >= Self.touchBatchSize { try? _locked_flushTouches() }
    }

    private func _locked_flushTouches() throws {
        guard !pendingTouches.isEmpty else { return }
        let touches = pendingTouches
        try index.updateLastAccess(touches)
        pendingTouches = [:]
    }

    /// Deletes the least recently used part; false when the cache is empty.
    func _locked_evictLeastRecentlyUsed() -> Bool {
        try? _locked_flushTouches()
        guard let key = index.leastRecentlyUsed() else { return false }
        _locked_delete(key)
        return true
    }

    func _locked_removeAll() {
        index.allKeys().forEach(_locked_delete)
    }
}

/// What inspection shows of one disk entry (TIP's inspection result entry).
public struct DiskCacheEntryInfo: Sendable, Equatable {
    public var identifier: String
    public var isPartial: Bool
    public var url: URL
    public var dimensions: PixelSize
    public var bytes: Int
    /// 1 for complete entries; bytes / expected length (at most 0.999) for partial ones.
    public var progress: Double
    public var isPlaceholder: Bool
}
