import PipelineLocking

/// Identical renders in flight run once: the first request for a key starts the render, every request for the
/// same key that arrives before it ends waits for that render's result. 100 concurrent requests for one
/// thumbnail make one source fetch, one decode and one encode.
///
/// The render runs in a task of its own, so a request that goes away (its client left) does not cancel it for
/// the others; the render itself is bounded by the request deadline (the source download's total timeout).
final class RenderCoalescing<Value: Sendable>: Sendable {
    private let inFlight = Locked([String: Task<Result<Value, ServiceError>, Never>]())

    /// Whether a render for `key` is running (a request for it joins that render and needs no slot).
    func isRendering(_ key: String) -> Bool {
        inFlight.withLock { $0[key] != nil }
    }

    /// The result of the render for `key`: a running one's, or `render`'s, started now. `isShared` says which.
    func value(for key: String, render: @escaping @Sendable () async -> Result<Value, ServiceError>)
        async -> (result: Result<Value, ServiceError>, isShared: Bool) {
        let (task, isShared) = inFlight.withLock { tasks -> (Task<Result<Value, ServiceError>, Never>, Bool) in
            if let running = tasks[key] { return (running, true) }
            let task = Task { [weak self] in
                let result = await render()
                self?.inFlight.withLock { _ = $0.removeValue(forKey: key) }
                return result
            }
            tasks[key] = task
            return (task, false)
        }
        return (await task.value, isShared)
    }
}
