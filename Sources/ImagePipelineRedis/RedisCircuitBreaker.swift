import PipelineLocking

/// Skips the server after repeated failures: after `threshold` failures in a row it opens for `openDuration`,
/// during which every command fails at once; then one command is let through (half open), and its outcome
/// closes the breaker or opens it again.
final class RedisCircuitBreaker: Sendable {
    private struct State {
        var failuresInARow = 0
        var openUntil: ContinuousClock.Instant?
        var trialInFlight = false
        var openings = 0
    }

    private let threshold: Int
    private let openDuration: Duration
    private let state = Locked(State())

    init(threshold: Int, openDuration: Duration) {
        self.threshold = threshold
        self.openDuration = openDuration
    }

    /// How often the breaker opened.
    var openings: Int { state.withLock { $0.openings } }

    /// Whether the breaker is open now.
    var isOpen: Bool {
        state.withLock { state in state.openUntil.map { ContinuousClock.now < $0 } ?? false }
    }

    /// Lets a command through, or throws while the breaker is open (and while its one trial is out).
    func admit() throws(BreakerOpen) {
        try state.withLock { (state: inout State) throws(BreakerOpen) in
            guard let until = state.openUntil else { return }
            let now = ContinuousClock.now
            if now < until { throw BreakerOpen(remaining: until - now) }
            if state.trialInFlight { throw BreakerOpen(remaining: .zero) }
            state.trialInFlight = true
        }
    }

    /// Counts a success, which closes the breaker; returns whether it was open (its trial succeeded).
    @discardableResult
    func recordSuccess() -> Bool {
        state.withLock { state in
            let wasOpen = state.openUntil != nil
            state.failuresInARow = 0
            state.openUntil = nil
            state.trialInFlight = false
            return wasOpen
        }
    }

    /// Counts a failure; opens the breaker at the threshold, or again when its trial failed.
    /// Returns whether this failure opened the breaker.
    @discardableResult
    func recordFailure() -> Bool {
        state.withLock { state in
            state.failuresInARow += 1
            let trialFailed = state.trialInFlight
            state.trialInFlight = false
            guard trialFailed || (state.openUntil == nil && state.failuresInARow >= threshold) else { return false }
            state.openUntil = .now + openDuration
            state.openings += 1
            return true
        }
    }

    /// Thrown while the breaker is open.
    struct BreakerOpen: Error {
        let remaining: Duration
    }
}
