/// The versions of the disk index's schema, and how an index written by an earlier version is brought up to
/// date when it opens. Every change adds nullable columns or columns with a default, so an index written by
/// any version opens in any other: an older library ignores the newer columns, and rows it writes leave them
/// NULL (an image without response metadata, as if it had been stored by hand).
///
/// The version is SQLite's `user_version`: 0 (never set) for the first schema, 2 once the response metadata
/// columns exist, 3 once files have checksums.
enum DiskCacheIndexSchema {
    /// The version this library writes.
    static let currentVersion = 3

    /// Columns added after the first schema, with their SQL types, in the order they were added.
    static let addedColumns: [(name: String, type: String)] = [
        // Response metadata of complete images (ETag and Last-Modified already had columns, for partials).
        ("cache_control", "TEXT"), ("expires", "TEXT"), ("response_date", "REAL"),
        ("age", "REAL NOT NULL DEFAULT 0"), ("received_at", "REAL"),
        // The 64-bit checksum of the file's bytes (`ContentChecksum`), checked on read; NULL in rows an earlier
        // version wrote (their size is checked alone).
        ("checksum", "INTEGER"),
    ]

    /// Adds the columns `database`'s `entries` table lacks and records the current version. Runs in one write
    /// transaction, so that processes opening the same old index at once add each column once.
    static func migrate(_ database: SQLiteDatabase) throws(DiskCacheError) {
        guard try version(of: database) < currentVersion else { return }
        do {
            try database.transaction {
                let existing = try columns(of: database)
                for column in addedColumns where !existing.contains(column.name) {
                    try database.execute("ALTER TABLE entries ADD COLUMN \(column.name) \(column.type)")
                }
                try database.execute("PRAGMA user_version = \(currentVersion)")
            }
        } catch let error as DiskCacheError {
            throw error
        } catch {
            throw .index("\(error)")
        }
    }

    /// The index's `user_version`.
    static func version(of database: SQLiteDatabase) throws(DiskCacheError) -> Int {
        try database.query("PRAGMA user_version") { statement throws(DiskCacheError) in
            try statement.step() ? statement.int(0) : 0
        }
    }

    /// The names of the `entries` table's columns.
    private static func columns(of database: SQLiteDatabase) throws(DiskCacheError) -> Set<String> {
        try database.query("PRAGMA table_info(entries)") { statement throws(DiskCacheError) in
            var names: Set<String> = []
            while try statement.step() {
                if let name = statement.text(1) { names.insert(name) }
            }
            return names
        }
    }
}
