import Foundation

/// Encoded images of one pipeline on disk: one file per complete image and per partial download, metadata in
/// an SQLite index (TIP's disk cache, with its failure modes fixed).
///
/// - Files are named by ``SafeFileName`` (partials add `%tmp`, which no safe name can contain), so no
///   identifier can point outside ``directory``. The index lives in `%index.sqlite` for the same reason.
/// - A write goes to a temporary file, is renamed over the entry's file, and only then recorded in the index
///   with the file's inode, size and 64-bit checksum. A crash of the process at any moment leaves either the
///   old entry or the new one. A file is not flushed to the disk on its own (the index is flushed in batches,
///   as SQLite's WAL does), so a power cut may lose the latest entries; a file that does not match its row
///   (replaced, truncated, missing, or holding other bytes) is detected on read, removed and reported as
///   ``ImagePipelineProblem/diskCacheEntryCorrupt(identifier:reason:)``, never served.
/// - A failed write (a full disk) removes only its temporary file: the entry that was there stays.
/// - Opening reads totals from the index, never scans the directory; leftovers of crashed writes are removed
///   in the background. Last-access updates are batched.
///
/// Thread-safe: every method takes the disk caches' lock (shared by all pipelines, as TIP's disk queue is).
/// Do not call it from the delegate queue.
public final class DiskCache: @unchecked Sendable {
    // @unchecked: `index`, `pendingTouches`, `spareFiles` and the files are used only under `pool`'s lock (a
    // write's own temp file aside, see `write(_:row:key:if:published:)`).

    /// The pipeline's directory.
    public let directory: String
    let owner: String
    let pool: DiskCachePool
    let fileSystem: any CacheFileSystem
    let index: DiskCacheIndex
    var pendingTouches: [EntryKey: Date] = [:]
    /// Files of deleted entries kept for the next writes to write over (`_locked_keepSpareFile`), with their sizes.
    var spareFiles: [(path: String, bytes: Int)] = []
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
            _locked_removeSpareFiles()
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
        let completeKey = EntryKey(identifier: identifier, partial: false), partialKey = EntryKey(identifier: identifier, partial: true)
        let (complete, partial) = pool.withLock { (_locked_read(completeKey, now: now), _locked_read(partialKey, now: now)) }
        let entry = CacheEntry(
            complete: checked(complete, key: completeKey).map { row, data in row.cachedImage(data, lastAccess: now) },
            partial: checked(partial, key: partialKey).map { row, data in
                PartialImageData(data: data, url: row.url, dimensions: row.dimensions, expectedByteCount: row.expectedLength,
                                 lastModified: row.lastModified, entityTag: row.entityTag, timeToLive: row.ttl,
                                 updatesExpiryOnAccess: row.updatesExpiry, lastAccess: now)
            })
        return entry.isEmpty ? nil : entry
    }

    /// The complete image of `identifier` without refreshing its last access (another pipeline looking, which
    /// must not move this pipeline's entry in its LRU order).
    public func peek(identifier: String, now: Date = Date()) -> CachedImageData? {
        DelegateQueueDiagnostics.noteHeavyWork()
        let key = EntryKey(identifier: identifier, partial: false)
        let read = pool.withLock { _locked_read(key, now: now, touch: false) }
        return checked(read, key: key).map { row, data in row.cachedImage(data, lastAccess: row.lastAccess) }
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

    /// The row and bytes of `key`, or nil (absent, expired, or not matching its file: then deleted). The bytes
    /// are not yet checked against the row's checksum: ``checked(_:key:)`` does that after the lock.
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

    /// `read` when its bytes match the checksum its row keeps (or the row keeps none). Checked without the lock:
    /// the check reads every byte, and every disk cache of the process waits for that lock. A mismatch is
    /// deleted and reported under the lock, unless the entry was written again meanwhile.
    private func checked(_ read: (Row, Data)?, key: EntryKey) -> (Row, Data)? {
        guard let (row, data) = read, let checksum = row.checksum, ContentChecksum.of(data) != checksum else { return read }
        pool.withLock {
            guard let current = try? _locked_row(key), current.inode == row.inode, current.checksum == checksum else { return }
            _locked_discardCorrupt(key, reason: "the file's bytes do not match the checksum the index holds")
        }
        return nil
    }

    func _locked_discardCorrupt(_ key: EntryKey, reason: String) {
        _locked_delete(key)
        pool._locked_report(.diskCacheEntryCorrupt(identifier: key.identifier, reason: reason))
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
