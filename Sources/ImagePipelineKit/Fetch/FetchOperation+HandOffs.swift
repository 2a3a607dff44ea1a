import Dispatch

// How another thread hands a fetch work on the fetch's queue: another fetch with an image or a download's
// events for it, or the answer from a rendition while it waits in the operation queue. Whether that runs in
// place or as a block depends on where the fetch's queue runs (a thread of its own, or a shared pool).
extension FetchOperation {
    /// Runs `body` on this fetch's queue for another fetch's thread, which hands it an image or a download's
    /// events; `body` adds this fetch's callbacks to `turn`, when given, which waits for them.
    ///
    /// With a thread per fetch, in place (`sync`): the queue is idle, or its blocks each get a thread and end
    /// soon, and no thread wakes for `body`. On a fetch queue target, as a block of the queue, which a busy pool
    /// thread takes without waking. There a thread that waited for this queue could wait for a block of it
    /// that needs a pool thread itself (one a `cancel()` sent, say), and with every pool thread waiting so,
    /// nothing would run until libdispatch added a thread, a second or more later; on a serial target, a `sync`
    /// from one fetch's block onto another fetch's queue would wait for itself. The block holds `turn` open
    /// until it has run: the fetches answered together reach their delegates in one turn, not a turn each.
    func runFromAnotherThread(holdingOpen turn: SharedDelegateTurn? = nil, _ body: @escaping @Sendable () -> Void) {
        guard runsOnSharedPool else { return queue.sync(execute: body) }
        turn?.holdOpen()
        queue.async {
            body()
            turn?.letGo()
        }
    }

    /// Claims this fetch, still waiting in the operation queue, for an answer from another fetch's rendition;
    /// false once it has started (its own steps then find the rendition).
    func claimAnswerBeforeStart() -> Bool {
        shared.withLock { state in
            guard !state.hasStarted else { return false }
            state.answerQueued = true
            return true
        }
    }
}
