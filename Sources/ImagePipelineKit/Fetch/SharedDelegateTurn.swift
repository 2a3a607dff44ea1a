import Dispatch
import PipelineLocking

/// One turn of the delegate queue shared by many fetches of one image: the fetch that decoded it, the fetches
/// that waited for that decode or took the image it held (``SharedDecodes``) and those answered from its
/// rendition while they waited in the operation queue (``WaitingFetches``) put their callbacks here, from several
/// threads, and the decoding fetch enqueues the turn once all are in. Each fetch's callbacks stay in their order;
/// the fetches run one after another. A hundred turns sent one by one reach the queue in waves, each waking its
/// thread again, which spreads the callbacks of a hundred fetches of one image far beyond the millisecond they
/// must all fit in; one turn keeps them together. What a callback starts elsewhere (a disk write, the end of its
/// operation) waits for the turn's last callback (``afterCallbacks(_:)``), so that no other thread takes the
/// delegate queue's core in the middle of the turn.
///
/// On a shared pool, the fetches that join the turn do so in blocks of their own queues, which run after the
/// decoding fetch asked to enqueue it: each such hand-off holds the turn open (``holdOpen()``) until its block
/// has run (``letGo()``), and the turn goes to the queue when the last one has.
final class SharedDelegateTurn: Sendable {
    private struct State {
        var turns: [@Sendable () -> Void] = []
        /// Hand-offs still to add their callbacks: while there are any, an enqueued turn waits for them.
        var holds = 0
        /// Where the turn is to go once no hand-off holds it open.
        var waitsToGoTo: DispatchQueue?
        /// Where the turn went, once enqueued: callbacks added later get a block of their own there at once.
        var sentTo: DispatchQueue?
        /// The turn that takes this one's callbacks instead (see ``forward(to:)``).
        var forwardedTo: SharedDelegateTurn?
        /// Whether the turn's block is running its callbacks, and what waits for it to end
        /// (``afterCallbacks(_:)``).
        var delivering = false
        var afterwards: [@Sendable () -> Void] = []
    }

    private let state = Locked(State())

    /// Adds one fetch's callbacks.
    func add(_ turn: @escaping @Sendable () -> Void) {
        enum Destination { case kept, forwarded(SharedDelegateTurn), sent(DispatchQueue) }
        let destination = state.withLock { state -> Destination in
            if let other = state.forwardedTo { return .forwarded(other) }
            if let queue = state.sentTo { return .sent(queue) }
            state.turns.append(turn)
            return .kept
        }
        switch destination {
        case .kept: break
        case .forwarded(let other): other.add(turn)
        case .sent(let queue): queue.async { DelegateQueueDiagnostics.delegateTurn(turn) }
        }
    }

    /// Keeps the turn from going to its queue until a matching ``letGo()``: a fetch is handed work that adds its
    /// callbacks later, on another thread. Only before the turn is enqueued.
    func holdOpen() {
        state.withLock { $0.holds += 1 }
    }

    /// Ends a ``holdOpen()``; the last one sends a turn that was enqueued meanwhile.
    func letGo() {
        let queue = state.withLock { state -> DispatchQueue? in
            state.holds -= 1
            guard state.holds == 0, let queue = state.waitsToGoTo else { return nil }
            state.waitsToGoTo = nil
            return queue
        }
        if let queue { enqueue(on: queue) }
    }

    /// Enqueues everything added as one block on `queue`, once no hand-off holds the turn open.
    func enqueue(on queue: DispatchQueue) {
        let all = state.withLock { state -> [@Sendable () -> Void] in
            guard state.forwardedTo == nil else { return [] }
            guard state.holds == 0 else {
                state.waitsToGoTo = queue
                return []
            }
            state.sentTo = queue
            defer { state.turns = [] }
            return state.turns
        }
        guard !all.isEmpty else { return }
        queue.async { [self] in
            DelegateQueueDiagnostics.delegateTurn {
                state.withLock { $0.delivering = true }
                for turn in all { turn() }
                let afterwards = state.withLock { state -> [@Sendable () -> Void] in
                    state.delivering = false
                    defer { state.afterwards = [] }
                    return state.afterwards
                }
                for work in afterwards { work() }
            }
        }
    }

    /// Runs `work` once the turn's block has run every callback in it, or at once when no block of this turn is
    /// running (`work` comes from a callback sent in a block of its own). Called from a callback.
    func afterCallbacks(_ work: @escaping @Sendable () -> Void) {
        enum Destination { case now, later, forwarded(SharedDelegateTurn) }
        let destination = state.withLock { state -> Destination in
            if let other = state.forwardedTo { return .forwarded(other) }
            guard state.delivering else { return .now }
            state.afterwards.append(work)
            return .later
        }
        switch destination {
        case .now: work()
        case .later: break
        case .forwarded(let other): other.afterCallbacks(work)
        }
    }

    /// Sends this turn's callbacks, those added so far and those to come, with `other`: a fetch that took the
    /// image another fetch's decode held delivers with that decode's fetches, not in a block of its own just
    /// before or after theirs. (Such a fetch decoded nothing, so no hand-off holds its own turn open.)
    func forward(to other: SharedDelegateTurn) {
        guard other !== self else { return }
        let added = state.withLock { state -> [@Sendable () -> Void] in
            guard state.forwardedTo == nil, state.sentTo == nil else { return [] }
            state.forwardedTo = other
            defer { state.turns = [] }
            return state.turns
        }
        added.forEach(other.add)
    }
}
