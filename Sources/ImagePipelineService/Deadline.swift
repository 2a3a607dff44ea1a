import PipelineLocking

/// Runs `operation` and returns its result, or ``ServiceError/gatewayTimeout`` once `limit` has passed,
/// whichever comes first; the loser is cancelled. Unlike a task group, this returns at the deadline even when
/// the operation is waiting on something that does not stop at cancellation (another request's render).
func withDeadline<T: Sendable>(
    _ limit: Duration, _ operation: @escaping @Sendable () async throws(ServiceError) -> T
) async -> Result<T, ServiceError> {
    let race = DeadlineRace<T>()
    return await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
            race.waiter.withLock { $0 = continuation }
            let timer = Task {
                try? await Task.sleep(for: limit)
                guard !Task.isCancelled else { return }
                race.finish(.failure(.gatewayTimeout))
                race.work.withLock { $0 }?.cancel()
            }
            race.timer.withLock { $0 = timer }
            let work = Task {
                do throws(ServiceError) {
                    race.finish(.success(try await operation()))
                } catch {
                    race.finish(.failure(error))
                }
                race.timer.withLock { $0 }?.cancel()
            }
            race.work.withLock { $0 = work }
        }
    } onCancel: {
        race.finish(.failure(.gatewayTimeout))
        race.work.withLock { $0 }?.cancel()
        race.timer.withLock { $0 }?.cancel()
    }
}

/// The two tasks of ``withDeadline(_:_:)`` and the caller waiting for the first of them to finish.
private final class DeadlineRace<T: Sendable>: Sendable {
    let waiter = Locked<CheckedContinuation<Result<T, ServiceError>, Never>?>(nil)
    let work = Locked<Task<Void, Never>?>(nil)
    let timer = Locked<Task<Void, Never>?>(nil)

    /// Resumes the caller with `result`, once: later results are dropped.
    func finish(_ result: Result<T, ServiceError>) {
        let continuation = waiter.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
        continuation?.resume(returning: result)
    }
}
