import Foundation
import Testing
@testable import ImagePipelineKit

@Suite("The disk index's SQLite connection")
struct SQLiteDatabaseTests {
    private static func database() throws -> (SQLiteDatabase, path: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-sqlite-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let database = try SQLiteDatabase(path: directory + "/test.sqlite")
        try database.execute("CREATE TABLE t (value INTEGER NOT NULL)")
        return (database, directory)
    }

    private static func values(in database: SQLiteDatabase) throws -> [Int] {
        try database.query("SELECT value FROM t ORDER BY value") { statement throws(DiskCacheError) in
            var values: [Int] = []
            while try statement.step() { values.append(statement.int(0)) }
            return values
        }
    }

    struct Failure: Error {}

    @Test("A transaction begun inside another joins it: both commit together, or a failure rolls back both")
    func nestedTransactionJoinsTheOuterOne() throws {
        let (database, directory) = try Self.database()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        try database.transaction {
            try database.run("INSERT INTO t VALUES (1)")
            try database.transaction { try database.run("INSERT INTO t VALUES (2)") }
        }
        #expect(try Self.values(in: database) == [1, 2])

        #expect(throws: Failure.self) {
            try database.transaction {
                try database.transaction { try database.run("INSERT INTO t VALUES (3)") }
                throw Failure()
            }
        }
        // The inner transaction's row went with the outer one's rollback.
        #expect(try Self.values(in: database) == [1, 2])

        // A second connection, as another process has, sees exactly what was committed.
        let other = try SQLiteDatabase(path: directory + "/test.sqlite")
        #expect(try Self.values(in: other) == [1, 2])
    }
}
