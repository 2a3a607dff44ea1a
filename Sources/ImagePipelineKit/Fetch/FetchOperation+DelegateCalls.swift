import Foundation

// How a fetch's callbacks reach its delegate: on the delegate queue, in the order the fetch sent them, with
// calls that come close together sharing one turn of that queue.
extension FetchOperation {
    /// Runs `body` with the delegate on the delegate queue, in order with every other callback.
    func _queue_tellDelegate(_ body: @escaping @Sendable (any FetchDelegate) -> Void) {
        _queue_onDelegateQueue { [self] in
            if let delegate { body(delegate) }
        }
    }

    /// Sends `didStart`, when the delegate has it.
    func _queue_tellDelegateStarted() {
        guard delegateCallbacks.contains(.start) else { return }
        _queue_tellDelegate { $0.fetchOperationDidStart(self) }
    }

    /// Runs `work` on the delegate queue after everything this fetch sent there before it.
    ///
    /// Calls that come close together share one turn of the delegate queue: `didStart`, `willAttempt` and the
    /// final image of a fetch that finds its image at once cost the queue (a UI's main thread) one block, not
    /// three. Order holds: whatever is pending has a block already enqueued ahead of anything sent later.
    func _queue_onDelegateQueue(_ work: @escaping @Sendable () -> Void) {
        let isFirst = pendingDelegateWork.withLock { pending -> Bool in
            pending.append(work)
            return pending.count == 1
        }
        guard isFirst else { return }
        let turn: @Sendable () -> Void = { [self] in
            let batch = pendingDelegateWork.withLock { pending -> [@Sendable () -> Void] in
                defer { pending = [] }
                return pending
            }
            for work in batch { work() }
        }
        if let sharedDelegateTurn { return sharedDelegateTurn.add(turn) }
        pipeline.configuration.delegateQueue.async { DelegateQueueDiagnostics.delegateTurn(turn) }
    }

    /// Records `progress` for ``FetchOperation/progress`` and tells the delegate, when it has the callback.
    func _queue_setProgress(_ progress: Double) {
        shared.withLock { $0.progress = progress }
        guard delegateCallbacks.contains(.progress) else { return }
        _queue_tellDelegate { $0.fetchOperation(self, didUpdateProgress: progress) }
    }
}
