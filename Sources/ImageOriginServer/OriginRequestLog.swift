import Foundation
import Synchronization
import PipelineLocking

/// The request log behind ``ImageOriginServer/requestLog``: records in read order, a count of completed
/// exchanges, and the callers waiting for that count.
///
/// Thread-safe: every access takes `state`'s lock. Event-loop threads write, test tasks read and wait;
/// nothing blocks while holding the lock, and waiters are resumed after it is released.
final class OriginRequestLog: Sendable {
    private struct Waiter {
        var count: Int
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var records: [OriginRequestRecord] = []
        var nextSequence = 1
        /// Completed exchanges among the records since the last clear (a trimmed record still counts).
        var completedSinceClear = 0
        var capacity: Int?
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
        /// Waiters whose timer fired before they had registered (a zero timeout).
        var expiredWaiters: Set<Int> = []
        var isShutDown = false
        var observer: (@Sendable (OriginRequestRecord) -> Void)?

        func index(of sequence: Int) -> Int? {
            // Sequences increase along the array: the searched one is almost always near the end.
            records.lastIndex { $0.sequence == sequence }
        }

        /// Removes and returns the waiters the current count satisfies.
        mutating func takeSatisfiedWaiters() -> [Waiter] {
            let done = waiters.filter { $0.value.count <= completedSinceClear }
            for key in done.keys { waiters[key] = nil }
            return Array(done.values)
        }
    }

    private let state = Locked(State())

    var records: [OriginRequestRecord] { state.withLock { $0.records } }

    /// Appends a record for a request just read and returns its sequence number.
    func begin(connection: Int, method: String, path: String, query: String?,
               headers: [(name: String, value: String)]) -> Int {
        state.withLock { state in
            let sequence = state.nextSequence
            state.nextSequence += 1
            state.records.append(OriginRequestRecord(
                sequence: sequence, connection: connection, method: method, path: path, query: query,
                headers: headers, receivedAt: Date()))
            if let capacity = state.capacity, state.records.count > capacity {
                // Drop the oldest completed records first so a stalled exchange can still be completed.
                let excess = state.records.count - capacity
                var dropped = 0
                state.records.removeAll { record in
                    guard dropped < excess, record.isComplete else { return false }
                    dropped += 1
                    return true
                }
            }
            return sequence
        }
    }

    /// Records the status about to be sent.
    func setStatus(_ status: Int, for sequence: Int) {
        state.withLock { state in
            if let index = state.index(of: sequence) { state.records[index].status = status }
        }
    }

    /// Records body bytes the kernel has taken so far, and the most ever queued beyond them.
    func setBytesSent(_ bytes: Int, peakQueued: Int, for sequence: Int) {
        state.withLock { state in
            if let index = state.index(of: sequence), !state.records[index].isComplete {
                state.records[index].bytesSent = bytes
                state.records[index].peakQueuedBytes = peakQueued
            }
        }
    }

    /// Marks the exchange `sequence` ended. Only the first call per exchange counts.
    func complete(_ sequence: Int, bytesSent: Int, peakQueued: Int, clientWentAway: Bool) {
        let (ready, observer, record) = state.withLock { state -> ([Waiter], (@Sendable (OriginRequestRecord) -> Void)?, OriginRequestRecord?) in
            guard let index = state.index(of: sequence), !state.records[index].isComplete else { return ([], nil, nil) }
            state.records[index].bytesSent = bytesSent
            state.records[index].peakQueuedBytes = peakQueued
            state.records[index].clientWentAway = clientWentAway
            state.records[index].isComplete = true
            state.records[index].completedAt = Date()
            state.completedSinceClear += 1
            return (state.takeSatisfiedWaiters(), state.observer, state.records[index])
        }
        // The observer first: a caller woken by the count may rely on what the observer recorded.
        if let observer, let record { observer(record) }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Empties the log; the completed count starts again from 0, sequence numbers do not.
    func clear() {
        state.withLock { state in
            state.records.removeAll()
            state.completedSinceClear = 0
        }
    }

    /// Keeps at most `capacity` records (oldest completed ones dropped first); `nil` keeps all.
    func setCapacity(_ capacity: Int?) {
        state.withLock { $0.capacity = capacity.map { max(0, $0) } }
    }

    /// Called with each record as its exchange completes, on an event-loop thread, before waiters that the
    /// completion satisfies are resumed: keep it short.
    func setObserver(_ observer: (@Sendable (OriginRequestRecord) -> Void)?) {
        state.withLock { $0.observer = observer }
    }

    /// Returns once `count` exchanges have completed since the last ``clear()``.
    /// - Throws: ``OriginServerError/timedOut(expected:completed:)`` after `timeout`,
    ///   ``OriginServerError/shutDown`` when the server stops first, `CancellationError` when the task is cancelled.
    func waitForCompleted(count: Int, timeout: Duration) async throws {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            self?.failWaiter(id) { .timedOut(expected: count, completed: $0) }
        }
        defer { timer.cancel() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if state.completedSinceClear >= count { return .success(()) }
                    if state.isShutDown { return .failure(OriginServerError.shutDown) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if state.expiredWaiters.remove(id) != nil {
                        return .failure(OriginServerError.timedOut(expected: count, completed: state.completedSinceClear))
                    }
                    state.waiters[id] = Waiter(count: count, continuation: continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Fails every waiter: the server will complete no more exchanges.
    func shutDown() {
        let waiters = state.withLock { state in
            state.isShutDown = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.continuation.resume(throwing: OriginServerError.shutDown) }
    }

    private func failWaiter(_ id: Int, error: (Int) -> OriginServerError) {
        let (waiter, completed) = state.withLock { state in
            let waiter = state.waiters.removeValue(forKey: id)
            if waiter == nil { state.expiredWaiters.insert(id) }
            return (waiter, state.completedSinceClear)
        }
        waiter?.continuation.resume(throwing: error(completed))
    }
}
