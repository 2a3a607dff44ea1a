import Foundation
import PipelineLocking

/// Decodes that fetches of the same bytes at the same target share, so that a hundred fetches of one image
/// decode it once (Nuke coalesces its decoding tasks the same way). A pipeline owns one.
///
/// The first fetch to ask decodes on its own queue; a fetch that asks while that decode runs, for equal bytes
/// under an equal key, waits for its outcome instead of decoding again. A fetch that comes after the decode
/// ended decodes on its own: the rendered cache, not this table, keeps results. Between the two, a decoder that
/// asks to hold its image (with a ``Hold``) keeps it here until it has put it in the rendered cache and calls
/// ``release(_:)`` with that hold: a fetch that got the same bytes in that window (a download stays joinable
/// until its image is stored) takes it instead of decoding again (without the hold, a hundred concurrent
/// fetches of one image sometimes decoded it twice).
final class SharedDecodes: Sendable {
    typealias Outcome = Result<DecodedImage, any Error>
    /// A caller waiting for a running decode: called with its outcome and the decoding caller's delegate turn.
    typealias Waiter = @Sendable (Outcome, SharedDelegateTurn?) -> Void

    /// What makes two decodes of equal bytes give the same image.
    struct Key: Hashable, Sendable {
        var identifier: String
        var target: TargetSizing
        var configuration: DecoderConfiguration
        var byteCount: Int
    }

    /// A caller's claim to hold the image of a decode it runs itself. Only a release of the claim that made the
    /// hold drops the image: a caller that took a held image, or decoded other bytes under the same key, and
    /// releases its own claim leaves the decoder's image for the callers still to come.
    final class Hold: Sendable {
        let key: Key

        init(_ key: Key) { self.key = key }
    }

    private struct Running {
        /// Tells this decode from a later one under the same key.
        var token: UInt64
        var data: Data
        var waiters: [Waiter] = []
        /// The finished decode's image, held for late callers until its decoder releases it, with the delegate
        /// turn its decoder shares: a late caller that takes the image sends its callbacks with that turn.
        var held: Held?
    }

    private struct Held {
        var outcome: Outcome
        var turn: SharedDelegateTurn?
        /// The claim of the caller that decoded it: the one release that drops it.
        var claim: Hold

        /// The image for a late caller, whose `turn` now goes with the decoder's.
        func take(sharing turn: SharedDelegateTurn?) -> Outcome {
            if let decodersTurn = self.turn { turn?.forward(to: decodersTurn) }
            return outcome
        }
    }

    private struct State {
        var lastToken: UInt64 = 0
        var running: [Key: Running] = [:]
    }

    private let state = Locked(State())

    /// Whether fetches wait for the decode running under `key`: a decoding fetch that was cancelled goes on
    /// for them rather than stopping at a checkpoint.
    func hasWaiters(_ key: Key) -> Bool {
        state.withLock { !($0.running[key]?.waiters.isEmpty ?? true) }
    }

    /// Decodes `data` with `decode` on the calling thread and returns the outcome; or, when a decode of equal
    /// bytes under `key` is running on another thread, returns `nil` at once and later calls `joined` with that
    /// decode's outcome and the `turn` its caller shares, on that decode's thread or beside it (the waiters
    /// of one decode are called on every core at once, before it returns).
    /// With a `hold` (for `key`), an own decode's image stays for later callers of equal bytes until
    /// ``release(_:)`` of that hold (a failed or interrupted decode is never held); a later caller that takes it
    /// has its `turn` forwarded to the decoding caller's (``SharedDelegateTurn/forward(to:)``).
    func decode(_ data: Data, key: Key, holding hold: Hold? = nil, using decode: () throws -> DecodedImage,
                sharing turn: SharedDelegateTurn? = nil,
                joined: @escaping Waiter) -> Outcome? {
        enum Step {
            case own(token: UInt64)
            case join(token: UInt64, data: Data)
            case held(Held, data: Data)
        }
        let step = state.withLock { state -> Step in
            if let running = state.running[key] {
                if let held = running.held { return .held(held, data: running.data) }
                return .join(token: running.token, data: running.data)
            }
            state.lastToken += 1
            state.running[key] = Running(token: state.lastToken, data: data)
            return .own(token: state.lastToken)
        }
        switch step {
        case .held(let held, let heldData):
            return heldData == data ? held.take(sharing: turn) : Outcome { try decode() }
        case .join(let token, let runningData):
            // Compared outside the lock: a few microseconds for a large image, against milliseconds of decoding.
            guard runningData == data else { return Outcome { try decode() } }
            enum Joined {
                case waiting
                case held(Held)
                case ended
            }
            let joinedStep = state.withLock { state -> Joined in
                guard let running = state.running[key], running.token == token else { return .ended }
                // It finished while the bytes were compared: its waiters were called already.
                if let held = running.held { return .held(held) }
                state.running[key]?.waiters.append(joined)
                return .waiting
            }
            switch joinedStep {
            case .waiting: return nil
            case .held(let held): return held.take(sharing: turn)
            case .ended: return Outcome { try decode() }
            }
        case .own(let token):
            let outcome = Outcome { try decode() }
            let waiters = state.withLock { state -> [Waiter] in
                guard var running = state.running[key], running.token == token else { return [] }
                let waiters = running.waiters
                if let hold, (try? outcome.get()) != nil {
                    running.waiters = []
                    running.held = Held(outcome: outcome, turn: turn, claim: hold)
                    state.running[key] = running
                } else {
                    state.running[key] = nil
                }
                return waiters
            }
            // The waiters first, on every core at once, handed this caller's delegate turn: their callbacks and
            // this caller's reach the delegate queue together.
            DispatchQueue.concurrentPerform(iterations: waiters.count) { waiters[$0](outcome, turn) }
            return outcome
        }
    }

    /// Drops the image that the decode made with `hold` held (its decoder has put it in the rendered cache, or
    /// gave up); does nothing when `hold` holds nothing.
    func release(_ hold: Hold) {
        state.withLock { state in
            if state.running[hold.key]?.held?.claim === hold { state.running[hold.key] = nil }
        }
    }

    /// How many callers wait for running decodes, all keys together (for tests and inspection).
    var waitingCallerCount: Int {
        state.withLock { $0.running.values.reduce(0) { $0 + $1.waiters.count } }
    }
}
