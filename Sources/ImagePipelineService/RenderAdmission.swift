import PipelineLocking

/// Bounds the renders running at once and the line waiting for them: past both, a render is refused at once
/// (``ServiceError/overloaded(retryAfterSeconds:)``, a 503) rather than queued without end, so an overloaded
/// service keeps answering quickly.
final class RenderAdmission: Sendable {
    private struct State {
        var running = 0
        var waiting: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>)] = []
        var nextWaiterID: UInt64 = 0
    }

    private let state = Locked(State())
    private let maxRunning: Int
    private let maxWaiting: Int
    private let retryAfterSeconds: Int

    init(maxRunning: Int, maxWaiting: Int, retryAfterSeconds: Int) {
        self.maxRunning = max(1, maxRunning)
        self.maxWaiting = max(0, maxWaiting)
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// Renders running now, and waiting.
    var counts: (running: Int, waiting: Int) { state.withLock { ($0.running, $0.waiting.count) } }

    /// Whether a render asking now would be refused: every slot taken and the line full. A request checks this
    /// before anything else of a render, so that a refusal costs no task and no wait.
    var isFull: Bool {
        state.withLock { $0.running >= maxRunning && $0.waiting.count >= maxWaiting }
    }

    /// Runs `body` once a slot is free.
    /// - Throws: ``ServiceError/overloaded(retryAfterSeconds:)`` when the line is full, or
    ///   ``ServiceError/gatewayTimeout`` when the task is cancelled while waiting (its deadline passed).
    func run<T: Sendable>(_ body: () async throws(ServiceError) -> T) async throws(ServiceError) -> T {
        try await enter()
        defer { leave() }
        return try await body()
    }

    private enum Entry { case admitted, refused, wait(UInt64) }

    private func enter() async throws(ServiceError) {
        let entry: Entry = state.withLock { state in
            if state.running < maxRunning {
                state.running += 1
                return .admitted
            }
            guard state.waiting.count < maxWaiting else { return .refused }
            state.nextWaiterID += 1
            return .wait(state.nextWaiterID)
        }
        switch entry {
        case .admitted: return
        case .refused: throw .overloaded(retryAfterSeconds: retryAfterSeconds)
        case .wait(let id):
            let admitted = await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let cancelled = state.withLock { state in
                        if Task.isCancelled { return true }
                        state.waiting.append((id, continuation))
                        return false
                    }
                    if cancelled { continuation.resume(returning: false) }
                }
            } onCancel: {
                let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                    guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiting.remove(at: index).continuation
                }
                waiter?.resume(returning: false)
            }
            // A waiter that was handed a slot owns it (`leave` counted it as running).
            guard admitted else { throw .gatewayTimeout }
        }
    }

    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard !state.waiting.isEmpty else {
                state.running -= 1
                return nil
            }
            return state.waiting.removeFirst().continuation   // the slot passes straight to the first waiter
        }
        next?.resume(returning: true)
    }
}
