import Dispatch
import PipelineLocking

/// Copies an SQLite database's write-ahead log back into the database on a queue of its own, instead of in
/// the commit that fills the log.
///
/// SQLite's own rule checkpoints inside the commit that takes the log past ``pagesBeforeCheckpoint``: the
/// copy and its two flushes to the disk (the log before, the database after) then run on the committing
/// thread. The disk index commits holding the lock every disk cache of the process waits for, reads included,
/// so each checkpoint stopped all of them for several milliseconds, a few times a second on a busy server.
/// Here the commit only asks for a checkpoint, and a second connection to the same file makes it on
/// ``queue``: a passive checkpoint, which copies what no reader still needs and never waits for writers, so
/// commits go on meanwhile.
///
/// The log starts again from its beginning only once every page in it was copied, and commits made during the
/// copy leave a few pages behind it. Copying those from the queue again would race the next commits each
/// time, so the first commit after the copy checkpoints them in place: a few pages, a short hold.
///
/// Should the queue fall behind (a long checkpoint, a starved thread), the commit that takes the log past
/// ``pagesBeforeCommitCheckpoint`` checkpoints in place as SQLite would, so the log stays bounded. A queue that
/// cannot open its connection leaves every checkpoint to the commits, at SQLite's usual size.
final class WALCheckpointer: @unchecked Sendable {
    // @unchecked: `database` is touched only on `queue`; the rest is behind `state`.

    /// Pages in the log (of 4 KiB) after which a commit asks for a checkpoint: SQLite's own default.
    let pagesBeforeCheckpoint: Int
    /// Pages in the log after which a commit checkpoints in place, the queue having fallen behind.
    let pagesBeforeCommitCheckpoint: Int
    private let path: String
    private let queue: DispatchQueue
    /// The second connection, opened on the first checkpoint.
    private var database: SQLiteDatabase?
    private let state = Locked(State())

    private struct State {
        var scheduled = false
        /// How far into the log the last checkpoint copied; 0 once the log started again.
        var copiedThrough = 0
        var closed = false
        /// Set when the queue's connection could not be opened: the commits checkpoint as SQLite would.
        var unavailable = false
    }

    /// A checkpointer for the database at `path`, which its writer connection hands its commits to
    /// (``SQLiteDatabase/checkpointInBackground(with:)``). `queue` is where the checkpoints run.
    init(path: String, pagesBeforeCheckpoint: Int = 1000, pagesBeforeCommitCheckpoint: Int = 4000,
         queue: DispatchQueue = DispatchQueue(label: "ImagePipelineKit.disk-index-checkpoint", qos: .utility)) {
        self.path = path
        self.pagesBeforeCheckpoint = pagesBeforeCheckpoint
        self.pagesBeforeCommitCheckpoint = pagesBeforeCommitCheckpoint
        self.queue = queue
    }

    /// Called after each commit of the writer connection, with the pages now in the log. Returns whether the
    /// commit must checkpoint in place.
    func committed(pagesInLog pages: Int) -> Bool {
        let (schedule, inPlace) = state.withLock { state -> (Bool, Bool) in
            if state.closed || state.unavailable { return (false, pages >= pagesBeforeCheckpoint) }
            if pages < state.copiedThrough { state.copiedThrough = 0 }
            let tailLeft = state.copiedThrough > 0 && pages > state.copiedThrough && !state.scheduled
            if tailLeft || pages >= pagesBeforeCommitCheckpoint {
                state.copiedThrough = pages
                return (false, true)
            }
            guard pages >= pagesBeforeCheckpoint, !state.scheduled else { return (false, false) }
            state.scheduled = true
            return (true, false)
        }
        if schedule { queue.async { self._checkpointQueue_checkpoint() } }
        return inPlace
    }

    /// Closes the queue's connection, after the checkpoint running on it if any; commits after it checkpoint in
    /// place, as SQLite would.
    func close() {
        queue.sync {
            state.withLock { $0.closed = true }
            database = nil
        }
    }

    private func _checkpointQueue_checkpoint() {
        // The flag drops only once the checkpoint is over, so commits meanwhile do not queue more of them; the
        // first commit after it asks again if the log is still long (frames committed during the copy).
        defer { state.withLock { $0.scheduled = false } }
        guard !state.withLock({ $0.closed }), let database = _checkpointQueue_openedDatabase() else { return }
        // The copy goes as far as the log stood when it began; what commits add meanwhile the first commit
        // after it copies (see `committed(pagesInLog:)`).
        guard let pagesCopied = database.checkpointPassively(), pagesCopied > 0 else { return }
        // SQLite flushes the database after a checkpoint only when no commit came during the copy; otherwise
        // the commit's checkpoint of what is left would flush every page copied here, holding the lock.
        database.flushDatabaseFile()
        state.withLock { $0.copiedThrough = pagesCopied }
    }

    private func _checkpointQueue_openedDatabase() -> SQLiteDatabase? {
        if let database { return database }
        // Opened like the writer's (WAL, `synchronous=NORMAL`: the checkpoint flushes the log before copying and
        // the database after, as the writer's would), but never creating a file the writer has not.
        guard let opened = try? SQLiteDatabase(path: path, creating: false) else {
            state.withLock { $0.unavailable = true }
            return nil
        }
        database = opened
        return opened
    }
}
