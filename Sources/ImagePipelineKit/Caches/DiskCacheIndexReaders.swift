import Foundation

/// Read-only connections to one disk cache's index that tell a lookup, without the disk lock, that the index
/// has no row of an identifier.
///
/// Every disk cache of the process works under one lock (``DiskCachePool``), and a write holds it for its
/// rename and its index transaction. A fetch that is not cached, the common case of a cold pipeline, would
/// wait for those writes only to learn that there is nothing to read. A reader connection answers that
/// question on its own: SQLite's WAL mode lets it read the last committed state while the locked connection
/// writes. Only "no row" is taken from it; when a row is there, the lookup reads it under the lock as before,
/// with its pending last-access time, expiry and file checks.
///
/// A connection is used by one thread at a time: it is taken from the idle ones, or opened when none is idle
/// (at most ``maxConnections``; past that, lookups go under the lock), and given back after one query. A
/// connection whose query fails is closed, and the lookup goes under the lock.
final class DiskCacheIndexReaders: @unchecked Sendable {
    // @unchecked: `idle` and `openCount` are touched only while `lock` is held; a connection taken from
    // `idle` is used by the taking thread alone until it is given back.
    private let path: String
    private let lock = NSLock()
    private var idle: [DiskCacheIndex] = []
    private var openCount = 0
    /// The most connections kept open: enough for the lookups one process makes at the same moment.
    static let maxConnections = 16

    /// Readers of the index at `path`, which the disk cache's own connection has created.
    init(path: String) {
        self.path = path
    }

    /// Whether the index may have a row of `identifier` (of either part when `partial` is `nil`): `false` only
    /// when a reader connection found none; `true` when one did, or none could ask.
    func mayHaveRow(identifier: String, partial: Bool? = nil) -> Bool {
        guard let reader = take() else { return true }
        do {
            let found = try reader.hasRow(identifier: identifier, partial: partial)
            lock.withLock { idle.append(reader) }
            return found
        } catch {
            // The connection is closed as it is released here.
            lock.withLock { openCount -= 1 }
            return true
        }
    }

    private func take() -> DiskCacheIndex? {
        let (reader, mayOpen) = lock.withLock { () -> (DiskCacheIndex?, Bool) in
            if let reader = idle.popLast() { return (reader, false) }
            guard openCount < Self.maxConnections else { return (nil, false) }
            openCount += 1
            return (nil, true)
        }
        if let reader { return reader }
        guard mayOpen else { return nil }
        // Opened outside the lock: opening reads the database's header and maps its shared memory.
        do {
            return try DiskCacheIndex(readingFrom: path)
        } catch {
            lock.withLock { openCount -= 1 }
            return nil
        }
    }
}
