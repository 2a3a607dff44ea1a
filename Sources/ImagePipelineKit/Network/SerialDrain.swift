import Dispatch
import Foundation

/// A serial queue that a reporting thread may run itself while nobody else runs it. Blocks run one at a time,
/// in the order they were added, on whichever thread drains: a block on a dispatch queue, or the thread of
/// ``runIfIdle(_:)``.
///
/// The download coordinator's work per event is a few microseconds of bookkeeping. Handing each burst of a
/// download's bytes from the event loop to a queue of its own cost a wake-up of another thread, often on
/// another core, before the bytes went on to the fetch. A transport's thread now runs that bookkeeping itself
/// when nobody else does, and only adds it to the backlog otherwise. It never waits: an event loop must not
/// block on work that may be waiting for it.
///
/// - ``async(_:)`` never runs the block on the caller's thread while the caller is in it (the caller may hold
///   locks the block needs): when nobody drains, a block on the dispatch queue does.
/// - ``runIfIdle(_:)`` runs the block, and everything added meanwhile, on the calling thread when nobody drains;
///   otherwise it joins the backlog of the thread that does.
/// - ``sync(_:)`` runs its body in turn with the blocks and returns what it returns: at once when this thread is
///   draining (a block that calls back in), on this thread when nobody drains, else once the drain ended.
final class SerialDrain: @unchecked Sendable {
    // @unchecked: `backlog`, `draining`, `drainer` and `waiters` are read and written only with `condition` locked.
    private let queue: DispatchQueue
    private let condition = NSCondition()
    private var backlog: [@Sendable () -> Void] = []
    /// Whether a thread drains the backlog, or a drain is queued: then new blocks only join the backlog.
    private var draining = false
    /// The thread running blocks now, while one does.
    private var drainer: pthread_t?
    /// Callers of ``sync(_:)`` waiting for the drain to end.
    private var waiters = 0

    /// A drain whose blocks, when no reporting thread runs them, run on a serial dispatch queue named `label`.
    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    func async(_ block: @escaping @Sendable () -> Void) {
        if add(block) { queue.async { self.drain() } }
    }

    func runIfIdle(_ block: @escaping @Sendable () -> Void) {
        if add(block) { drain() }
    }

    func sync<T>(_ body: () -> T) -> T {
        let isDrainer = withCondition { () -> Bool in
            if let drainer, pthread_equal(drainer, pthread_self()) != 0 { return true }
            waiters += 1
            while draining { condition.wait() }
            waiters -= 1
            draining = true
            drainer = pthread_self()
            return false
        }
        if isDrainer { return body() }
        let result = body()
        // What the body or other threads added meanwhile runs on the queue, not inside this caller.
        let more = withCondition { () -> Bool in
            drainer = nil
            guard !backlog.isEmpty else {
                stopDraining()
                return false
            }
            return true
        }
        if more { queue.async { self.drain() } }
        return result
    }

    /// Adds `block`, and says whether the caller is to start a drain (nobody drains, nor is a drain queued).
    private func add(_ block: @escaping @Sendable () -> Void) -> Bool {
        withCondition {
            backlog.append(block)
            guard !draining else { return false }
            draining = true
            return true
        }
    }

    /// Runs blocks until the backlog is empty, including those added meanwhile.
    private func drain() {
        while true {
            let batch = withCondition { () -> [@Sendable () -> Void] in
                guard !backlog.isEmpty else {
                    stopDraining()
                    return []
                }
                drainer = pthread_self()
                defer { backlog.removeAll(keepingCapacity: true) }
                return backlog
            }
            if batch.isEmpty { return }
            for block in batch { block() }
        }
    }

    /// Ends the drain and wakes the callers of ``sync(_:)`` that wait for it. Called with `condition` locked.
    private func stopDraining() {
        draining = false
        drainer = nil
        if waiters > 0 { condition.broadcast() }
    }

    private func withCondition<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }
}
