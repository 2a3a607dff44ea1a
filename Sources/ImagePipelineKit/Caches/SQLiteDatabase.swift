import CSQLite
import Foundation

/// Why the disk cache could not do something.
public enum DiskCacheError: Error, Hashable, Sendable, CustomStringConvertible {
    /// SQLite refused (the index file is unreadable, locked by another process, or corrupt).
    case index(String)
    /// A file operation failed; `errno` says why (ENOSPC: the disk is full).
    case file(operation: String, errno: Int32)

    public var description: String {
        switch self {
        case .index(let message): "disk cache index: \(message)"
        case .file(let operation, let code): "disk cache \(operation): \(String(cString: strerror(code)))"
        }
    }
}

/// A small SQLite connection: prepared statements, transactions, nothing else.
///
/// Not thread-safe: its owner serializes every use (a ``DiskCache`` under the disk caches' lock, a
/// ``WALCheckpointer`` on its queue).
final class SQLiteDatabase {
    private var handle: OpaquePointer?
    private var statements: [String: Statement] = [:]
    /// Where commits go to ask for checkpoints; kept here, since SQLite holds an unretained pointer to it for
    /// as long as the connection is open.
    private var checkpointer: WALCheckpointer?

    /// Opens the database at `path` in WAL mode, creating it unless `creating` is false: readers never block
    /// the writer, and a crash leaves the last committed transaction intact.
    init(path: String, creating: Bool = true) throws(DiskCacheError) {
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (creating ? SQLITE_OPEN_CREATE : 0)
        guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            sqlite3_close(handle)
            handle = nil
            throw .index(message)
        }
        sqlite3_busy_timeout(handle, 2000)
        try execute("PRAGMA journal_mode=WAL")
        // NORMAL in WAL mode: a power cut may lose the last transactions, never consistency.
        try execute("PRAGMA synchronous=NORMAL")
    }

    deinit {
        statements.values.forEach { $0.finalize() }
        sqlite3_close(handle)
    }

    /// Hands this connection's checkpoints to `checkpointer` (see ``WALCheckpointer``) in place of SQLite's own
    /// rule, which checkpoints inside the commit that fills the log.
    func checkpointInBackground(with checkpointer: WALCheckpointer) {
        self.checkpointer = checkpointer
        sqlite3_wal_hook(handle, { context, connection, _, pages in
            guard let context else { return SQLITE_OK }
            if Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue().committed(pagesInLog: Int(pages)) {
                _ = sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            }
            return SQLITE_OK
        }, Unmanaged.passUnretained(checkpointer).toOpaque())
    }

    /// A passive checkpoint: copies the log's pages that no reader still needs back into the database, without
    /// waiting for readers or writers. Returns how far into the log it copied, in pages; `nil` when SQLite
    /// refused (`SQLITE_BUSY`: another connection's checkpoint is running, which copies the same log).
    func checkpointPassively() -> Int? {
        var pagesInLog: Int32 = 0, pagesCopied: Int32 = 0
        guard sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &pagesInLog, &pagesCopied) == SQLITE_OK else {
            return nil
        }
        return Int(pagesCopied)
    }

    /// Flushes the database file to the disk through SQLite's own handle of it (a descriptor of ours, once
    /// closed, would drop the process's locks on the file).
    func flushDatabaseFile() {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK, let file,
              let sync = file.pointee.pMethods?.pointee.xSync else { return }
        _ = sync(file, SQLITE_SYNC_NORMAL)
    }

    func execute(_ sql: String) throws(DiskCacheError) {
        var error: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(handle, sql, nil, nil, &error) == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? "error"
            sqlite3_free(error)
            throw .index(message)
        }
    }

    /// Runs the query `sql` with `values` bound, lets `body` read its rows, and resets the statement after.
    ///
    /// The reset is what lets several processes share one database: a cached statement left on a row keeps its
    /// read snapshot open, and in WAL mode, once another process commits, every later write of this connection
    /// fails with `SQLITE_BUSY_SNAPSHOT`.
    func query<T>(_ sql: String, _ values: [SQLiteValue] = [],
                  _ body: (Statement) throws(DiskCacheError) -> T) throws(DiskCacheError) -> T {
        let statement = try statement(sql).bind(values)
        defer { statement.reset() }
        return try body(statement)
    }

    /// Runs `sql`, a statement that returns no rows, with `values` bound.
    func run(_ sql: String, _ values: [SQLiteValue] = []) throws(DiskCacheError) {
        try query(sql, values) { statement throws(DiskCacheError) in try statement.run() }
    }

    /// A prepared statement for `sql`, cached: reset and rebound on every use. Left on a row, it holds a read
    /// snapshot until then: use ``query(_:_:_:)`` or ``run(_:_:)``, which reset it at once.
    func statement(_ sql: String) throws(DiskCacheError) -> Statement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var prepared: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &prepared, nil) == SQLITE_OK, let prepared else {
            throw .index(String(cString: sqlite3_errmsg(handle)))
        }
        let statement = Statement(prepared, database: self)
        statements[sql] = statement
        return statement
    }

    /// Runs `body` in one transaction: all of it commits, or none of it. Called inside another transaction,
    /// `body` joins it, and commits or rolls back with it.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        guard sqlite3_get_autocommit(handle) != 0 else { return try body() }
        try run("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try run("COMMIT")
            return result
        } catch {
            try? run("ROLLBACK")
            throw error
        }
    }

    fileprivate var lastError: String { String(cString: sqlite3_errmsg(handle)) }

    /// One prepared statement with positional parameters (1-based) and columns (0-based).
    final class Statement {
        private let pointer: OpaquePointer
        private unowned let database: SQLiteDatabase

        fileprivate init(_ pointer: OpaquePointer, database: SQLiteDatabase) {
            self.pointer = pointer
            self.database = database
        }

        fileprivate func finalize() { sqlite3_finalize(pointer) }

        func reset() {
            sqlite3_reset(pointer)
            sqlite3_clear_bindings(pointer)
        }

        @discardableResult
        func bind(_ values: [SQLiteValue]) -> Statement {
            for (offset, value) in values.enumerated() {
                let index = Int32(offset + 1)
                switch value {
                case .integer(let number): sqlite3_bind_int64(pointer, index, Int64(number))
                case .real(let number): sqlite3_bind_double(pointer, index, number)
                // SQLITE_TRANSIENT: SQLite copies the text before this call returns.
                case .text(let text): sqlite3_bind_text(pointer, index, text, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
                case .null: sqlite3_bind_null(pointer, index)
                }
            }
            return self
        }

        /// Advances to the next row: `true` while there is one.
        func step() throws(DiskCacheError) -> Bool {
            switch sqlite3_step(pointer) {
            case SQLITE_ROW: return true
            case SQLITE_DONE: return false
            default: throw .index(database.lastError)
            }
        }

        /// Runs a statement that returns no rows.
        func run() throws(DiskCacheError) {
            _ = try step()
        }

        func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(pointer, column)) }
        func double(_ column: Int32) -> Double { sqlite3_column_double(pointer, column) }
        /// The column's number, or `nil` when it is NULL.
        func optionalDouble(_ column: Int32) -> Double? {
            sqlite3_column_type(pointer, column) == SQLITE_NULL ? nil : sqlite3_column_double(pointer, column)
        }
        /// The column's integer, or `nil` when it is NULL.
        func optionalInt(_ column: Int32) -> Int? {
            sqlite3_column_type(pointer, column) == SQLITE_NULL ? nil : Int(sqlite3_column_int64(pointer, column))
        }
        func text(_ column: Int32) -> String? {
            sqlite3_column_text(pointer, column).map { String(cString: $0) }
        }
    }
}

/// A value bound to a statement parameter.
enum SQLiteValue {
    case integer(Int)
    case real(Double)
    case text(String)
    case null

    static func optional(_ text: String?) -> SQLiteValue { text.map(SQLiteValue.text) ?? .null }
    static func optionalReal(_ number: Double?) -> SQLiteValue { number.map(SQLiteValue.real) ?? .null }
}
