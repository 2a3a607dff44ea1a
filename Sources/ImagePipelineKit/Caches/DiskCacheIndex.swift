import Foundation

/// The SQLite index of one ``DiskCache``: a row per complete image and per partial download, with the file's
/// name, inode, size and checksum, so that a file that does not match its row is caught on read. Every SQL statement
/// of the disk cache is here. Not thread-safe: the disk cache uses it only under its pool's lock.
///
/// Several processes may share one index (SQLite in WAL mode, with a busy timeout): every statement goes
/// through ``SQLiteDatabase/query(_:_:_:)`` or ``SQLiteDatabase/run(_:_:)``, which release its read snapshot
/// as soon as it was read.
final class DiskCacheIndex {
    /// Names one part of an entry: the complete image or the partial download of an identifier.
    struct Key: Hashable {
        var identifier: String
        var partial: Bool
    }

    /// One row.
    struct Row {
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
        /// The rest of a complete image's response metadata (its validators are `entityTag` and
        /// `lastModified`); `nil` when none was kept.
        var cacheControl: String? = nil
        var expires: String? = nil
        var responseDate: Date? = nil
        var age: TimeInterval = 0
        var receivedAt: Date? = nil
        /// The ``ContentChecksum`` of the file's bytes; `nil` in rows written before files had checksums.
        var checksum: UInt64? = nil

        /// The complete image this row describes, holding `data`.
        func cachedImage(_ data: Data, lastAccess: Date) -> CachedImageData {
            CachedImageData(data: data, url: url, dimensions: dimensions ?? PixelSize(width: 0, height: 0),
                            isPlaceholder: placeholder, isAnimated: animated, timeToLive: ttl,
                            updatesExpiryOnAccess: updatesExpiry, lastAccess: lastAccess, httpMetadata: httpMetadata)
        }

        /// What the response said, when the row kept it.
        var httpMetadata: HTTPCacheMetadata? {
            get {
                receivedAt.map { HTTPCacheMetadata(entityTag: entityTag, lastModified: lastModified, cacheControl: cacheControl,
                                                   expires: expires, date: responseDate, age: age, receivedAt: $0) }
            }
            set {
                entityTag = newValue?.entityTag
                lastModified = newValue?.lastModified
                cacheControl = newValue?.cacheControl
                expires = newValue?.expires
                responseDate = newValue?.date
                age = newValue?.age ?? 0
                receivedAt = newValue?.receivedAt
            }
        }
    }

    /// What the index's hygiene sweep needs of a row.
    struct SweepRow {
        var rowid: Int64
        var key: Key
        var inode: UInt64
        var lastAccess: Date
        var ttl: TimeInterval
        var area: Int
    }

    private let database: SQLiteDatabase
    /// Copies the log back into the index off the writes' lock.
    private let checkpointer: WALCheckpointer

    /// Opens (creating) the index at `path`; an index of an earlier schema gains the newer columns.
    init(path: String) throws(DiskCacheError) {
        database = try SQLiteDatabase(path: path)
        checkpointer = WALCheckpointer(path: path)
        database.checkpointInBackground(with: checkpointer)
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
        try DiskCacheIndexSchema.migrate(database)
    }

    deinit {
        // Before the writer's connection closes: the last connection to close copies the log back and removes it.
        checkpointer.close()
    }

    /// Bytes and rows of the whole index.
    func totals() throws(DiskCacheError) -> (bytes: Int, count: Int) {
        try database.query("SELECT COALESCE(SUM(bytes), 0), COUNT(*) FROM entries") { statement throws(DiskCacheError) in
            _ = try statement.step()
            return (statement.int(0), statement.int(1))
        }
    }

    /// The row of `key`, as last written (last-access updates not yet written are the caller's).
    func row(_ key: Key) throws(DiskCacheError) -> Row? {
        try database.query("""
            SELECT url, width, height, bytes, last_access, ttl, updates_expiry, last_modified, etag, expected_length,
                   placeholder, animated, inode, cache_control, expires, response_date, age, received_at, checksum
            FROM entries WHERE identifier = ? AND partial = ?
            """, [.text(key.identifier), .integer(key.partial ? 1 : 0)]) { statement throws(DiskCacheError) in
            guard try statement.step(), let url = statement.text(0).flatMap(URL.init(string:)) else { return nil }
            let width = statement.int(1), height = statement.int(2)
            return Row(url: url, dimensions: width > 0 && height > 0 ? PixelSize(width: width, height: height) : nil,
                       bytes: statement.int(3), lastAccess: Date(timeIntervalSinceReferenceDate: statement.double(4)),
                       ttl: statement.double(5), updatesExpiry: statement.int(6) != 0, lastModified: statement.text(7),
                       entityTag: statement.text(8), expectedLength: statement.int(9), placeholder: statement.int(10) != 0,
                       animated: statement.int(11) != 0, inode: UInt64(bitPattern: Int64(statement.int(12))),
                       cacheControl: statement.text(13), expires: statement.text(14),
                       responseDate: statement.optionalDouble(15).map(Date.init(timeIntervalSinceReferenceDate:)),
                       age: statement.double(16),
                       receivedAt: statement.optionalDouble(17).map(Date.init(timeIntervalSinceReferenceDate:)),
                       checksum: statement.optionalInt(18).map { UInt64(bitPattern: Int64($0)) })
        }
    }

    /// Runs `body` holding the database's write lock (one transaction): another process's writes wait for it
    /// (the busy timeout), so a write that renames its file and then records its row does both inside one
    /// hold, and a reader holding the lock never sees one without the other.
    func holdingWriteLock<T>(_ body: () throws -> T) throws -> T {
        try database.transaction(body)
    }

    /// Writes `row` for `key`, naming its file `file`, replacing any row the key had.
    func upsert(_ row: Row, key: Key, file: String) throws(DiskCacheError) {
        try database.run("""
            INSERT OR REPLACE INTO entries (identifier, partial, file, inode, bytes, url, width, height, last_access,
                ttl, updates_expiry, last_modified, etag, expected_length, placeholder, animated, cache_control, expires,
                response_date, age, received_at, checksum)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [
                .text(key.identifier), .integer(key.partial ? 1 : 0), .text(file), .integer(Int(Int64(bitPattern: row.inode))),
                .integer(row.bytes), .text(row.url.absoluteString), .integer(row.dimensions?.width ?? 0),
                .integer(row.dimensions?.height ?? 0), .real(row.lastAccess.timeIntervalSinceReferenceDate), .real(row.ttl),
                .integer(row.updatesExpiry ? 1 : 0), .optional(row.lastModified), .optional(row.entityTag),
                .integer(row.expectedLength), .integer(row.placeholder ? 1 : 0), .integer(row.animated ? 1 : 0),
                .optional(row.cacheControl), .optional(row.expires), .optionalReal(row.responseDate?.timeIntervalSinceReferenceDate),
                .real(row.age), .optionalReal(row.receivedAt?.timeIntervalSinceReferenceDate),
                row.checksum.map { .integer(Int(Int64(bitPattern: $0))) } ?? .null,
            ])
    }

    /// Replaces the response metadata of `key`'s row (a `304` confirmed its image) and its last access, without
    /// touching its file.
    func updateHTTPMetadata(_ metadata: HTTPCacheMetadata, lastAccess: Date, key: Key) throws(DiskCacheError) {
        try database.run("""
            UPDATE entries SET etag = ?, last_modified = ?, cache_control = ?, expires = ?, response_date = ?, age = ?,
                received_at = ?, last_access = ? WHERE identifier = ? AND partial = ?
            """, [
                .optional(metadata.entityTag), .optional(metadata.lastModified), .optional(metadata.cacheControl),
                .optional(metadata.expires), .optionalReal(metadata.date?.timeIntervalSinceReferenceDate), .real(metadata.age),
                .real(metadata.receivedAt.timeIntervalSinceReferenceDate), .real(lastAccess.timeIntervalSinceReferenceDate),
                .text(key.identifier), .integer(key.partial ? 1 : 0),
            ])
    }

    func delete(_ key: Key) throws(DiskCacheError) {
        try database.run("DELETE FROM entries WHERE identifier = ? AND partial = ?",
                         [.text(key.identifier), .integer(key.partial ? 1 : 0)])
    }

    /// Gives `from`'s row the identifier `identifier` and the file `file`.
    func move(_ from: Key, to identifier: String, file: String) throws(DiskCacheError) {
        try database.run("UPDATE entries SET identifier = ?, file = ? WHERE identifier = ? AND partial = ?",
                         [.text(identifier), .text(file), .text(from.identifier), .integer(from.partial ? 1 : 0)])
    }

    /// Writes last-access times in one transaction.
    func updateLastAccess(_ touches: [Key: Date]) throws {
        try database.transaction {
            for (key, date) in touches {
                try database.run("UPDATE entries SET last_access = ? WHERE identifier = ? AND partial = ?",
                                 [.real(date.timeIntervalSinceReferenceDate), .text(key.identifier), .integer(key.partial ? 1 : 0)])
            }
        }
    }

    /// The least recently used part, if any.
    func leastRecentlyUsed() -> Key? {
        try? database.query("SELECT identifier, partial FROM entries ORDER BY last_access LIMIT 1") { statement in
            guard (try? statement.step()) == true, let identifier = statement.text(0) else { return nil }
            return Key(identifier: identifier, partial: statement.int(1) != 0)
        }
    }

    /// Whether a row names the file `name` (true when the index cannot tell: a file is kept when in doubt).
    func namesFile(_ name: String) -> Bool {
        (try? database.query("SELECT 1 FROM entries WHERE file = ? LIMIT 1", [.text(name)]) { statement in
            (try? statement.step()) != false
        }) ?? true
    }

    /// Up to `limit` rows after `afterRow`, in rowid order.
    func rows(after afterRow: Int64, limit: Int) -> [SweepRow] {
        let sql = """
            SELECT rowid, identifier, partial, inode, last_access, ttl, width * height FROM entries
            WHERE rowid > ? ORDER BY rowid LIMIT ?
            """
        return (try? database.query(sql, [.integer(Int(afterRow)), .integer(limit)]) { statement in
            var rows: [SweepRow] = []
            while (try? statement.step()) == true {
                rows.append(SweepRow(rowid: Int64(statement.int(0)),
                                     key: Key(identifier: statement.text(1) ?? "", partial: statement.int(2) != 0),
                                     inode: UInt64(bitPattern: Int64(statement.int(3))),
                                     lastAccess: Date(timeIntervalSinceReferenceDate: statement.double(4)),
                                     ttl: statement.double(5), area: statement.int(6)))
            }
            return rows
        }) ?? []
    }

    /// Every part's key.
    func allKeys() -> [Key] {
        (try? database.query("SELECT identifier, partial FROM entries") { statement in
            var keys: [Key] = []
            while (try? statement.step()) == true {
                keys.append(Key(identifier: statement.text(0) ?? "", partial: statement.int(1) != 0))
            }
            return keys
        }) ?? []
    }

    /// What inspection shows of every part, most recently used first.
    func entryInfos() -> [DiskCacheEntryInfo] {
        let sql = "SELECT identifier, partial, url, width, height, bytes, expected_length, placeholder FROM entries ORDER BY last_access DESC"
        return (try? database.query(sql) { statement in
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
        }) ?? []
    }
}
