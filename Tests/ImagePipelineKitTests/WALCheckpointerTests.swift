import Dispatch
import Foundation
import Testing
@testable import ImagePipelineKit

@Suite("The disk index's checkpoints, off the committing thread")
struct WALCheckpointerTests {
    private final class Fixture {
        let directory: String
        let database: SQLiteDatabase
        let checkpointer: WALCheckpointer
        private let queue: DispatchQueue
        private var suspended = true

        /// A database whose checkpoints go to a checkpointer on a queue that is suspended until the test
        /// resumes it.
        init(pagesBeforeCheckpoint: Int, pagesBeforeCommitCheckpoint: Int) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-wal-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            database = try SQLiteDatabase(path: directory + "/test.sqlite")
            queue = DispatchQueue(label: "test.checkpoints")
            queue.suspend()
            checkpointer = WALCheckpointer(path: directory + "/test.sqlite", pagesBeforeCheckpoint: pagesBeforeCheckpoint,
                                           pagesBeforeCommitCheckpoint: pagesBeforeCommitCheckpoint, queue: queue)
            database.checkpointInBackground(with: checkpointer)
            try database.execute("CREATE TABLE t (value TEXT NOT NULL)")
        }

        /// Commits `count` rows of about a page each, one transaction per row.
        func insert(_ count: Int) throws {
            for _ in 0..<count { try database.run("INSERT INTO t VALUES (?)", [.text(String(repeating: "x", count: 4000))]) }
        }

        /// The rows the database file itself holds, without its log: what checkpoints copied into it.
        func rowsCopiedIntoTheDatabaseFile() throws -> Int {
            let copy = directory + "/copy-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: directory + "/test.sqlite", toPath: copy + "/test.sqlite")
            let alone = try SQLiteDatabase(path: copy + "/test.sqlite")
            guard try count("SELECT COUNT(*) FROM sqlite_master WHERE name = 't'", in: alone) == 1 else { return 0 }
            return try count("SELECT COUNT(*) FROM t", in: alone)
        }

        private func count(_ sql: String, in database: SQLiteDatabase) throws -> Int {
            try database.query(sql) { statement throws(DiskCacheError) in
                _ = try statement.step()
                return statement.int(0)
            }
        }

        func resumeQueue() {
            if suspended { queue.resume() }
            suspended = false
        }

        /// Lets the queue run, and waits until the checkpoints it was asked for are over.
        func runAskedCheckpoints() {
            resumeQueue()
            queue.sync {}
        }

        func suspendQueue() {
            if !suspended { queue.suspend() }
            suspended = true
        }

        /// Lets the queue run (libdispatch must not release a suspended queue), closes the checkpointer and
        /// removes the files, whether or not the test got to its end.
        func remove() {
            resumeQueue()
            checkpointer.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    @Test("A commit that fills the log leaves the copy to the checkpointer's queue, which copies every committed row")
    func checkpointRunsOnTheQueue() throws {
        let fixture = try Fixture(pagesBeforeCheckpoint: 20, pagesBeforeCommitCheckpoint: 1000)
        defer { fixture.remove() }

        try fixture.insert(40)
        // The log is past 20 pages, and the queue has not run: nothing was copied by the commits themselves.
        #expect(try fixture.rowsCopiedIntoTheDatabaseFile() == 0)

        fixture.runAskedCheckpoints()
        #expect(try fixture.rowsCopiedIntoTheDatabaseFile() == 40)

        // With every page copied, the next commit starts the log again: its row is in the new log only.
        try fixture.insert(1)
        #expect(try fixture.rowsCopiedIntoTheDatabaseFile() == 40)
    }

    @Test("What was committed after the queue's copy began is copied by the next commit, so that the log can start again")
    func nextCommitCopiesWhatTheQueueLeft() throws {
        let fixture = try Fixture(pagesBeforeCheckpoint: 20, pagesBeforeCommitCheckpoint: 1000)
        defer { fixture.remove() }

        try fixture.insert(20)
        // A reader of another connection keeps the first 20 rows' snapshot, so the queue's copy stops there,
        // as it stops where the log stood when it began while commits go on.
        let reader = try SQLiteDatabase(path: fixture.directory + "/test.sqlite")
        try reader.execute("BEGIN")
        _ = try reader.query("SELECT COUNT(*) FROM t") { statement throws(DiskCacheError) in try statement.step() }
        try fixture.insert(20)
        fixture.runAskedCheckpoints()
        #expect(try fixture.rowsCopiedIntoTheDatabaseFile() < 40)

        // With the queue stopped again, only the commit itself can copy the rest.
        fixture.suspendQueue()
        try reader.execute("COMMIT")
        try fixture.insert(1)
        #expect(try fixture.rowsCopiedIntoTheDatabaseFile() == 41)
    }

    @Test("When the queue falls behind, the commit that takes the log past the second limit checkpoints in place")
    func commitCheckpointsWhenTheQueueFallsBehind() throws {
        let fixture = try Fixture(pagesBeforeCheckpoint: 20, pagesBeforeCommitCheckpoint: 100)
        defer { fixture.remove() }

        try fixture.insert(30)
        #expect(try fixture.rowsCopiedIntoTheDatabaseFile() == 0)
        // Each row is a page of the log and more: well past 100 pages.
        try fixture.insert(90)
        let copied = try fixture.rowsCopiedIntoTheDatabaseFile()
        #expect(copied > 30 && copied < 120)
    }

    @Test("Once closed, the checkpointer runs nothing more, and commits checkpoint in place as SQLite would")
    func closedCheckpointerLeavesCheckpointsToTheCommits() throws {
        let fixture = try Fixture(pagesBeforeCheckpoint: 20, pagesBeforeCommitCheckpoint: 100)
        defer { fixture.remove() }
        fixture.resumeQueue()
        fixture.checkpointer.close()

        #expect(fixture.checkpointer.committed(pagesInLog: 19) == false)
        #expect(fixture.checkpointer.committed(pagesInLog: 20) == true)
        try fixture.insert(40)
        #expect(try fixture.rowsCopiedIntoTheDatabaseFile() > 0)
    }
}
