import Foundation

/// Encoded images of one pipeline on disk: one file per complete image and per partial download, metadata in
/// an SQLite index (TIP's disk cache, tip-behaviour b10, with its failure modes fixed).
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
    // @unchecked: `database`, `pendingTouches` and the files are used only under `pool`'s lock.

    /// The pipeline's directory.
    public let directory: String
    let owner: String
    let pool: DiskCachePool
    private let fileSystem: any CacheFileSystem
    private let database: SQLiteDatabase
    private var pendingTouches: [EntryKey: Date] = [:]
    private var removesDirectory = false
    /// Touches kept in memory before one transaction writes them.
    static let touchBatchSize = 64

    private struct EntryKey: Hashable {
        var identifier: String
        var partial: Bool
    }

    /// Opens (creating) the cache in `directory`.
    /// - Throws: ``DiskCacheError`` when the directory or the index cannot be created or opened.
    init(directory: String, owner: String, pool: DiskCachePool, fileSystem: any CacheFileSystem = POSIXCacheFileSystem()) throws {
        self.directory = directory
        self.owner = owner
        self.pool = pool
        self.fileSystem = fileSystem
        try fileSystem.createDirectory(directory)
        database = try SQLiteDatabase(path: directory + "/%index.sqlite")
        try database.execute("""
            CREATE TABLE IF NOT EXISTS entries (
                identifier TEXT NOT NULL, partial INTEGER NOT NULL, file TEXT NOT NULL, inode INTEGER NOT NULL,
                bytes INTEGER NOT NULL, url TEXT NOT NULL, width INTEGER, height INTEGER, last_access REAL NOT NULL,
                ttl REAL NOT NULL, updates_expiry INTEGER NOT NULL, last_modified TEXT, etag TEXT,
                expected_length INTEGER NOT NULL, placeholder INTEGER NOT NULL, animated INTEGER NOT NULL,
                PRIMARY KEY (identifier, partial));
            CREATE INDEX IF NOT EXISTS entries_by_access ON entries (last_access);
            CREATE INDEX IF NOT EXISTS entries_by_file ON entries (file);
            """)
        let totals = try database.statement("SELECT COALESCE(SUM(bytes), 0), COUNT(*) FROM entries")
        _ = try totals.step()
        let (bytes, count) = (totals.int(0), totals.int(1))
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
            if removesDirectory, (try? scalar("SELECT COUNT(*) FROM entries")) == 0 {
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

    /// The complete image of `identifier` without refreshing its last access (another pipeline looking, b6).
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
    static func isReservedFileName(_ name: String) -> Bool {
        name.hasPrefix("%index.sqlite") || name.hasPrefix(RenditionTables.fileNamePrefix)
    }

    /// Metadata of every entry (no bytes read), most recently used first, for inspection.
    public var entries: [DiskCacheEntryInfo] {
        pool.withLock {
            try? _locked_flushTouches()
            guard let statement = try? database.statement(
                "SELECT identifier, partial, url, width, height, bytes, expected_length, placeholder FROM entries ORDER BY last_access DESC")
            else { return [] }
            var out: [DiskCacheEntryInfo] = []
            while (try? statement.step()) == true {
                let bytes = statement.int(5), expected = statement.int(6)
                out.append(DiskCacheEntryInfo(
                    identifier: statement.text(0) ?? "", isPartial: statement.int(1) != 0,
                    url: URL(string: statement.text(2) ?? "") ?? URL(fileURLWithPath: "/"),
                    dimensions: PixelSize(width: statement.int(3), height: statement.int(4)), bytes: bytes,
                    progress: statement.int(1) != 0 ? min(Double(bytes) / Double(max(expected, 1)), 0.999) : 1,
                    isPlaceholder: statement.int(7) != 0))
            }
            return out
        }
    }

    /// Bytes of all this cache's files.
    public var totalBytes: Int { pool.withLock { (try? scalar("SELECT COALESCE(SUM(bytes), 0) FROM entries")) ?? 0 } }
    /// Entries (complete and partial parts counted separately).
    public var totalCount: Int { pool.withLock { (try? scalar("SELECT COUNT(*) FROM entries")) ?? 0 } }

    // MARK: - Writing

    /// Stores complete image bytes under TIP's replacement rules (``MemoryCache`` has the same);
    /// `forced` (a store operation of a real image) replaces whatever is there. A complete image at least as
    /// large as the partial replaces the partial. Returns whether the bytes are now on disk.
    @discardableResult
    public func storeComplete(_ image: CachedImageData, identifier: String, forced: Bool = false) -> Bool {
        DelegateQueueDiagnostics.noteHeavyWork()
        guard !image.data.isEmpty else { return false }
        return pool.withLock {
            let key = EntryKey(identifier: identifier, partial: false)
            if !forced, let existing = try? _locked_row(key),
               !MemoryCache.completeShouldReplace(existing.cachedImage(Data(), lastAccess: existing.lastAccess), with: image) {
                return false
            }
            let row = Row(url: image.url, dimensions: image.dimensions, bytes: image.data.count, lastAccess: image.lastAccess,
                          ttl: image.timeToLive, updatesExpiry: image.updatesExpiryOnAccess, lastModified: nil,
                          entityTag: nil, expectedLength: 0, placeholder: image.isPlaceholder, animated: image.isAnimated)
            guard _locked_write(image.data, row: row, key: key) else { return false }
            let partial = EntryKey(identifier: identifier, partial: true)
            if let old = try? _locked_row(partial), (old.dimensions?.area ?? 0) <= image.dimensions.area {
                _locked_delete(partial)
            }
            pool._locked_prune(priority: owner)
            return (try? _locked_row(key)) != nil
        }
    }

    /// Stores a partial download for resuming, unless a complete image at least as large is already there.
    @discardableResult
    public func storePartial(_ partial: PartialImageData, identifier: String) -> Bool {
        DelegateQueueDiagnostics.noteHeavyWork()
        guard !partial.data.isEmpty else { return false }
        return pool.withLock {
            if let complete = try? _locked_row(EntryKey(identifier: identifier, partial: false)),
               (complete.dimensions?.area ?? 0) >= (partial.dimensions?.area ?? 0) {
                return false
            }
            let row = Row(url: partial.url, dimensions: partial.dimensions, bytes: partial.data.count,
                          lastAccess: partial.lastAccess, ttl: partial.timeToLive, updatesExpiry: partial.updatesExpiryOnAccess,
                          lastModified: partial.lastModified, entityTag: partial.entityTag,
                          expectedLength: partial.expectedByteCount, placeholder: false, animated: false)
            let key = EntryKey(identifier: identifier, partial: true)
            guard _locked_write(partial.data, row: row, key: key) else { return false }
            pool._locked_prune(priority: owner)
            return (try? _locked_row(key)) != nil
        }
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
                    try database.statement("UPDATE entries SET identifier = ?, file = ? WHERE identifier = ? AND partial = ?")
                        .bind([.text(newIdentifier), .text(fileName(to)), .text(identifier), .integer(partial ? 1 : 0)]).run()
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

    /// One index row.
    private struct Row {
        var url: URL
        var dimensions: PixelSize?
        var bytes: Int
        var lastAccess: Date
        var ttl: TimeInterval
        var updatesExpiry: Bool
        var lastModified: String?
        var entityTag: String?
        var expectedLength: Int
        var placeholder: Bool
        var animated: Bool
        var inode: UInt64 = 0

        /// The complete image this row describes, holding `data`.
        func cachedImage(_ data: Data, lastAccess: Date) -> CachedImageData {
            CachedImageData(data: data, url: url, dimensions: dimensions ?? PixelSize(width: 0, height: 0),
                            isPlaceholder: placeholder, isAnimated: animated, timeToLive: ttl,
                            updatesExpiryOnAccess: updatesExpiry, lastAccess: lastAccess)
        }
    }

    private func fileName(_ key: EntryKey) -> String {
        SafeFileName.make(for: key.identifier) + (key.partial ? "%tmp" : "")
    }

    private func path(_ name: String) -> String { directory + "/" + name }

    private func scalar(_ sql: String) throws -> Int {
        let statement = try database.statement(sql)
        _ = try statement.step()
        return statement.int(0)
    }

    private func _locked_row(_ key: EntryKey) throws -> Row? {
        let statement = try database.statement("""
            SELECT url, width, height, bytes, last_access, ttl, updates_expiry, last_modified, etag, expected_length,
                   placeholder, animated, inode FROM entries WHERE identifier = ? AND partial = ?
            """).bind([.text(key.identifier), .integer(key.partial ? 1 : 0)])
        guard try statement.step(), let url = statement.text(0).flatMap(URL.init(string:)) else { return nil }
        let width = statement.int(1), height = statement.int(2)
        var lastAccess = Date(timeIntervalSinceReferenceDate: statement.double(4))
        if let pending = pendingTouches[key] { lastAccess = pending }
        return Row(url: url, dimensions: width > 0 && height > 0 ? PixelSize(width: width, height: height) : nil,
                   bytes: statement.int(3), lastAccess: lastAccess, ttl: statement.double(5),
                   updatesExpiry: statement.int(6) != 0, lastModified: statement.text(7), entityTag: statement.text(8),
                   expectedLength: statement.int(9), placeholder: statement.int(10) != 0, animated: statement.int(11) != 0,
                   inode: UInt64(bitPattern: Int64(statement.int(12))))
    }

    /// The row of `key`, or nil when there is none or it expired (then deleted).
    private func _locked_unexpiredRow(_ key: EntryKey, now: Date) -> Row? {
        guard let row = try? _locked_row(key) else { return nil }
        guard now.timeIntervalSince(row.lastAccess) <= row.ttl else {
            _locked_delete(key)
            return nil
        }
        return row
    }

    /// The row and bytes of `key`, or nil (absent, expired, or not matching its file: then deleted).
    private func _locked_read(_ key: EntryKey, now: Date, touch: Bool = true) -> (Row, Data)? {
        guard let row = _locked_unexpiredRow(key, now: now) else { return nil }
        let file: (data: Data, inode: UInt64)
        do {
            file = try fileSystem.read(path(fileName(key)))
        } catch {
            _locked_discardCorrupt(key, reason: "\(error)")
            return nil
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

    private func _locked_discardCorrupt(_ key: EntryKey, reason: String) {
        _locked_delete(key)
        pool._locked_report(.diskCacheEntryCorrupt(identifier: key.identifier, reason: reason))
    }

    /// temp file → fsync → rename over the entry's file → index row (with the new inode) in one transaction.
    private func _locked_write(_ data: Data, row: Row, key: EntryKey) -> Bool {
        let limits = pool._locked_limits()
        guard data.count <= limits.maxEntryBytes, limits.maxBytes > 0 else {
            pool._locked_report(.imageTooLargeToStoreInDiskCache(identifier: key.identifier, bytes: data.count))
            return false
        }
        let name = fileName(key)
        let temporary = path("%write-\(UInt64.random(in: 0...UInt64.max))")
        let old = try? _locked_row(key)
        do {
            try fileSystem.write(data, to: temporary)
            try fileSystem.rename(temporary, to: path(name))
        } catch {
            fileSystem.remove(temporary)
            pool._locked_report(.diskCacheWriteFailed(identifier: key.identifier, error: error))
            return false
        }
        var row = row
        row.inode = fileSystem.inode(of: path(name)) ?? 0
        do {
            try database.statement("""
                INSERT OR REPLACE INTO entries (identifier, partial, file, inode, bytes, url, width, height, last_access,
                    ttl, updates_expiry, last_modified, etag, expected_length, placeholder, animated)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).bind([
                    .text(key.identifier), .integer(key.partial ? 1 : 0), .text(name), .integer(Int(Int64(bitPattern: row.inode))),
                    .integer(row.bytes), .text(row.url.absoluteString), .integer(row.dimensions?.width ?? 0),
                    .integer(row.dimensions?.height ?? 0), .real(row.lastAccess.timeIntervalSinceReferenceDate), .real(row.ttl),
                    .integer(row.updatesExpiry ? 1 : 0), .optional(row.lastModified), .optional(row.entityTag),
                    .integer(row.expectedLength), .integer(row.placeholder ? 1 : 0), .integer(row.animated ? 1 : 0),
                ]).run()
        } catch {
            // The file is the new one but the index kept the old row: the inode check will catch it on read.
            pool._locked_report(.diskCacheWriteFailed(identifier: key.identifier, error: error))
            return false
        }
        pendingTouches[key] = nil
        pool._locked_adjust(owner: owner, bytes: row.bytes - (old?.bytes ?? 0), count: old == nil ? 1 : 0)
        return true
    }

    private func _locked_delete(_ key: EntryKey) {
        guard let row = try? _locked_row(key) else { return }
        fileSystem.remove(path(fileName(key)))
        _ = try? database.statement("DELETE FROM entries WHERE identifier = ? AND partial = ?")
            .bind([.text(key.identifier), .integer(key.partial ? 1 : 0)]).run()
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
        try database.transaction {
            for (key, date) in touches {
                try database.statement("UPDATE entries SET last_access = ? WHERE identifier = ? AND partial = ?")
                    .bind([.real(date.timeIntervalSinceReferenceDate), .text(key.identifier), .integer(key.partial ? 1 : 0)]).run()
            }
        }
        pendingTouches = [:]
    }

    /// Deletes the least recently used part; false when the cache is empty.
    func _locked_evictLeastRecentlyUsed() -> Bool {
        try? _locked_flushTouches()
        guard let statement = try? database.statement("SELECT identifier, partial FROM entries ORDER BY last_access LIMIT 1"),
              (try? statement.step()) == true, let identifier = statement.text(0)
        else { return false }
        _locked_delete(EntryKey(identifier: identifier, partial: statement.int(1) != 0))
        return true
    }

    /// Whether a row names the file `name`.
    func _locked_indexNames(_ name: String) -> Bool {
        guard let statement = try? database.statement("SELECT 1 FROM entries WHERE file = ? LIMIT 1").bind([.text(name)])
        else { return true }   // when in doubt, keep the file
        return (try? statement.step()) != false
    }

    /// Checks up to `limit` rows after `afterRow` (SQLite rowid order) and deletes the false ones: expired,
    /// file missing or replaced (reported as corrupt), or a partial no larger than the complete image.
    /// Returns the last rowid checked, `nil` when there were no more rows.
    func _locked_removeFalseEntries(afterRow: Int64, limit: Int, now: Date) -> Int64? {
        guard let statement = try? database.statement("""
            SELECT rowid, identifier, partial, inode, last_access, ttl, width * height FROM entries
            WHERE rowid > ? ORDER BY rowid LIMIT ?
            """).bind([.integer(Int(afterRow)), .integer(limit)])
        else { return nil }
        var rows: [(rowid: Int64, key: EntryKey, inode: UInt64, expired: Bool, area: Int)] = []
        while (try? statement.step()) == true {
            let key = EntryKey(identifier: statement.text(1) ?? "", partial: statement.int(2) != 0)
            let lastAccess = pendingTouches[key]?.timeIntervalSinceReferenceDate ?? statement.double(4)
            rows.append((Int64(statement.int(0)), key, UInt64(bitPattern: Int64(statement.int(3))),
                         now.timeIntervalSinceReferenceDate - lastAccess > statement.double(5), statement.int(6)))
        }
        for row in rows {
            if row.expired {
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

    func _locked_removeAll() {
        guard let statement = try? database.statement("SELECT identifier, partial FROM entries") else { return }
        var keys: [EntryKey] = []
        while (try? statement.step()) == true {
            keys.append(EntryKey(identifier: statement.text(0) ?? "", partial: statement.int(1) != 0))
        }
        keys.forEach(_locked_delete)
    }
}

/// Scenario 52's hygiene, once per open, in the background: index rows that are expired, whose file is gone
/// or was replaced, or that are partials no larger than their complete image; then files no row names
/// (leftovers of writes a crash interrupted, or strays). It works in batches, taking the disk lock for one
/// batch at a time, so a large cache stays usable while it runs; the directory is listed outside the lock.
private struct DiskCacheSweep: Sendable {
    static let batchSize = 256
    weak var cache: DiskCache?
    let pool: DiskCachePool
    let fileSystem: any CacheFileSystem
    let directory: String

    func run(now: Date = Date()) {
        var after: Int64 = 0
        // nil: no rows left, or the cache was released.
        while let last = pool.withLock({ cache?._locked_removeFalseEntries(afterRow: after, limit: Self.batchSize, now: now) }) {
            after = last
        }
        let names = fileSystem.contentsOfDirectory(directory).filter { !DiskCache.isReservedFileName($0) }
        var start = 0
        while start < names.count {
            let batch = names[start..<min(start + Self.batchSize, names.count)]
            let stillOpen = pool.withLock { () -> Bool in
                guard let cache else { return false }
                for name in batch where !cache._locked_indexNames(name) {
                    fileSystem.remove(directory + "/" + name)
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
}

/// What inspection shows of one disk entry (TIP's inspection result entry, a13).
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
