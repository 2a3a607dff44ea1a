import Dispatch
import PipelineLocking

/// One turn of the delegate queue shared by many fetches: the fetches answered at once from a rendition another
/// fetch made (``WaitingFetches``) put their callbacks here from several threads, and the turn is enqueued once,
/// when all are in. Each fetch's callbacks stay in their order; the fetches run one after another.
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
