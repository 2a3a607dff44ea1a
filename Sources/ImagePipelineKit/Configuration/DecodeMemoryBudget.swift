import Foundation
import PipelineLocking

/// The pixel memory of the decodes running at once, bounded for every pipeline of a configuration
/// (``GlobalConfiguration/maxBytesForDecodesInFlight``).
///
/// Each decode passes ``DecodingLimits`` on its own, but a dozen fetches of small files that each declare a
/// huge image would together allocate gigabytes. A fetch's decode therefore takes its pixel bytes from this
/// budget when the decoder is about to allocate them (``DecodingLimits/check(frameCount:of:)`` is that moment
/// for every codec) and gives them back once its delegate has the image, or when an incremental session ends.
/// A first claim that finds no room does not wait on its thread: the decode stops (``NoRoom``), and its fetch
/// asks to be called once room is given back (``whenRoom(for:until:_:)``), then decodes again. Its thread goes
/// on with other work meanwhile, which matters on a shared pool (``GlobalConfiguration/fetchQueueTarget``): the
/// fetches whose progressive sessions hold the memory need a pool thread to finish and give it back, and a pool
/// of threads all waiting here would have none. A decode that can never fit, a fetch that waited ``maximumWait``
/// in vain, and a decode that needs more while it already holds some (an animation's next frame: stopping there
/// would throw away its frames, and waiting could deadlock two animations) fail with
/// ``ImageCodecError/limitExceeded(_:)`` and ``ImageCodecError/Limit/decodeMemoryBudget(_:)``.
final class DecodeMemoryBudget: Sendable {
    /// How long a fetch waits for room, from its decode's first stop, before it fails.
    static let maximumWait = DispatchTimeInterval.seconds(30)

    /// A decode stopped before it allocated, because the budget had no room for its first claim now: the caller
    /// calls ``whenRoom(for:until:_:)`` with ``bytes`` and decodes again when told.
    struct NoRoom: Error {
        let bytes: Int
    }

    /// What ``whenRoom(for:until:_:)`` was asked for: called with `true` once `bytes` may fit.
    private struct Waiter {
        var token: UInt64
        var bytes: Int
        var resume: @Sendable (Bool) -> Void
    }

    private struct State {
        var capacity: Int
        var inUse = 0
        var mostInUse = 0
        var waiters: [Waiter] = []
        var lastWaiterToken: UInt64 = 0

        /// Whether `bytes` more fit now.
        func fits(_ bytes: Int) -> Bool {
            inUse + bytes <= capacity
        }
    }

    private let state: Locked<State>

    init(capacity: Int) {
        state = Locked(State(capacity: capacity))
    }

    var capacity: Int {
        get { state.withLock { $0.capacity } }
        set {
            state.withLock { $0.capacity = newValue }
            resumeWaitersThatFit()
        }
    }

    /// The bytes the decodes running now hold.
    var inUse: Int { state.withLock { $0.inUse } }

    /// The most bytes the decodes ever held at once.
    var peakInUse: Int { state.withLock { $0.mostInUse } }

    /// How many fetches wait to be told of room (``whenRoom(for:until:_:)``).
    var waitingCount: Int { state.withLock { $0.waiters.count } }

    /// A claim a decode draws on while it is bound to ``Claim/current``; given back by ``Claim/releaseAll()``
    /// or when the claim goes. With `stopsForRoom`, a first draw that finds no room throws ``NoRoom`` (which
    /// the decode passes on as a limit); without, it fails.
    func claim(stopsForRoom: Bool) -> Claim {
        Claim(budget: self, stopsForRoom: stopsForRoom)
    }

    /// Calls `resume` with `true` once a first claim of `bytes` may fit (at once when it does now), or with
    /// `false` at `deadline` without room. It may be called with `true` and find the room taken again by then;
    /// the caller then stops and asks again, with the deadline of its first stop. Called on an arbitrary
    /// thread, never with a lock held.
    func whenRoom(for bytes: Int, until deadline: DispatchTime, _ resume: @escaping @Sendable (Bool) -> Void) {
        let token = state.withLock { state -> UInt64? in
            guard !state.fits(bytes) else { return nil }
            state.lastWaiterToken += 1
            state.waiters.append(Waiter(token: state.lastWaiterToken, bytes: bytes, resume: resume))
            return state.lastWaiterToken
        }
        guard let token else { return resume(true) }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: deadline) { [self] in
            let expired = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.token == token }) else { return nil }
                return state.waiters.remove(at: index)
            }
            expired?.resume(false)
        }
    }

    /// One decode's share of the budget.
    final class Claim: Sendable {
        /// The claim of the decode running on this thread (or task), if it runs under a budget.
        @TaskLocal static var current: Claim?

        private let budget: DecodeMemoryBudget
        private let stopsForRoom: Bool
        /// The bytes drawn, and those of a first draw that found no room and stopped the decode.
        private let draws = Locked<(held: Int, stoppedFor: Int?)>((0, nil))

        init(budget: DecodeMemoryBudget, stopsForRoom: Bool) {
            self.budget = budget
            self.stopsForRoom = stopsForRoom
        }

        deinit {
            releaseAll()
        }

        /// The bytes of a first draw that found no room and stopped the decode (see `stopsForRoom`), if one did.
        var stoppedForRoom: Int? { draws.withLock { $0.stoppedFor } }

        /// Makes the claim `bytes` in all (it never shrinks while the decode runs).
        func grow(to bytes: Int) throws(ImageCodecError) {
            let holding = draws.withLock { $0.held }
            guard bytes > holding else { return }
            let stops = stopsForRoom && holding == 0
            guard try budget.take(bytes - holding, orStop: stops) else {
                draws.withLock { $0.stoppedFor = bytes }
                throw .limitExceeded(.decodeMemoryBudget(bytes))
            }
            draws.withLock { $0.held = bytes }
        }

        func releaseAll() {
            let bytes = draws.withLock { draws in
                defer { draws.held = 0 }
                return draws.held
            }
            if bytes > 0 { budget.give(bytes) }
        }
    }

    /// Takes `bytes` when they fit. When they do not: returns `false` with `orStop` if room may come (decodes
    /// hold some, and `bytes` fit in the whole budget), or throws.
    private func take(_ bytes: Int, orStop: Bool) throws(ImageCodecError) -> Bool {
        let outcome = state.withLock { state -> Bool? in
            guard state.fits(bytes) else { return orStop && bytes <= state.capacity && state.inUse > 0 ? false : nil }
            state.inUse += bytes
            state.mostInUse = max(state.mostInUse, state.inUse)
            return true
        }
        guard let outcome else { throw .limitExceeded(.decodeMemoryBudget(bytes)) }
        return outcome
    }

    private func give(_ bytes: Int) {
        state.withLock { $0.inUse -= bytes }
        resumeWaitersThatFit()
    }

    /// Tells every waiter whose bytes fit in the room there is now. Each decodes again; one that finds the
    /// room taken by another stops and waits again, so no order among them is promised.
    private func resumeWaitersThatFit() {
        let resumed = state.withLock { state -> [Waiter] in
            let room = state.capacity - state.inUse
            let fitting = state.waiters.filter { $0.bytes <= room }
            if !fitting.isEmpty { state.waiters.removeAll { $0.bytes <= room } }
            return fitting
        }
        for waiter in resumed { waiter.resume(true) }
    }
}
