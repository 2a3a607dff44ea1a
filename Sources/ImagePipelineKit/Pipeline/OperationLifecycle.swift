import Foundation
import Synchronization
import PipelineLocking

/// The executing and finished flags of an asynchronous Foundation `Operation`, moved once each way
/// (ready → executing → finished), with the KVO notifications an `OperationQueue` waits for.
///
/// ``FetchOperation`` and ``StoreOperation`` both hold one: their `isExecuting`/`isFinished` overrides read it,
/// `start()` calls ``begin(_:)`` and their last step calls ``finish(_:)``.
final class OperationLifecycle: Sendable {
    private enum Phase { case ready, executing, finished }
    private let phase = Locked(Phase.ready)

    var isExecuting: Bool { phase.withLock { $0 == .executing } }
    var isFinished: Bool { phase.withLock { $0 == .finished } }

    /// Moves a ready operation to executing and tells KVO; false (and nothing changes) when it was not ready.
    func begin(_ operation: Operation) -> Bool {
        let began = phase.withLock { phase -> Bool in
            guard phase == .ready else { return false }
            phase = .executing
            return true
        }
        guard began else { return false }
        operation.willChangeValue(forKey: "isExecuting")
        operation.didChangeValue(forKey: "isExecuting")
        return true
    }

    /// Moves the operation to finished (from executing, or straight from ready for one that completed without
    /// running) and tells KVO.
    func finish(_ operation: Operation) {
        operation.willChangeValue(forKey: "isFinished")
        operation.willChangeValue(forKey: "isExecuting")
        phase.withLock { $0 = .finished }
        operation.didChangeValue(forKey: "isExecuting")
        operation.didChangeValue(forKey: "isFinished")
    }
}
