import Dispatch
import PipelineLocking

/// One turn of the delegate queue shared by many fetches of one image: the fetch that decoded it, the fetches
/// that waited for that decode (``SharedDecodes``) and those answered from its rendition while they waited in the
/// operation queue (``WaitingFetches``) put their callbacks here, from several threads, and the decoding fetch
/// enqueues the turn once all are in. Each fetch's callbacks stay in their order; the fetches run one after
/// another. A hundred turns sent one by one reach the queue in waves, each waking its thread again, which
/// spreads the callbacks of a hundred fetches of one image far beyond the millisecond they must all fit in;
/// one turn keeps them together.
final class SharedDelegateTurn: Sendable {
    private let turns = Locked<[@Sendable () -> Void]>([])

    /// Adds one fetch's callbacks.
    func add(_ turn: @escaping @Sendable () -> Void) {
        turns.withLock { $0.append(turn) }
    }

    /// Enqueues everything added as one block on `queue`.
    func enqueue(on queue: DispatchQueue) {
        let all = turns.withLock { turns -> [@Sendable () -> Void] in
            defer { turns = [] }
            return turns
        }
        guard !all.isEmpty else { return }
        queue.async {
            DelegateQueueDiagnostics.delegateTurn {
                for turn in all { turn() }
            }
        }
    }
}
