import Foundation
import PipelineLocking

/// The pixel memory of the decodes running at once, bounded for every pipeline of a configuration
/// (``GlobalConfiguration/maxBytesForDecodesInFlight``).
///
/// Each decode passes ``DecodingLimits`` on its own, but a dozen fetches of small files that each declare a
/// huge image would together allocate gigabytes. A fetch's decode therefore takes its pixel bytes from this
/// budget when the decoder is about to allocate them (``DecodingLimits/check(frameCount:of:)`` is that moment
/// for every codec) and gives them back once its delegate has the image, or when an incremental session ends.
/// A first claim waits for room, for at most
/// ``maximumWait``; a decode that can never fit, a claim that waited in vain, and a decode that needs more
/// while it already holds some (an animation's next frame: waiting there could deadlock two animations) fail
/// with ``ImageCodecError/limitExceeded(_:)`` and ``ImageCodecError/Limit/decodeMemoryBudget(_:)``.
final class DecodeMemoryBudget: @unchecked Sendable {
    // @unchecked: the two counters are read and written only with `condition` locked.
    /// How long a decode waits for room before it fails.
    static let maximumWait = Duration.seconds(30)

    private let condition = NSCondition()
    private var capacityBytes: Int
    private var bytesInUse = 0
    private var mostBytesInUse = 0

    init(capacity: Int) {
        capacityBytes = capacity
    }

    var capacity: Int {
        get { withCondition { capacityBytes } }
        set {
            withCondition { capacityBytes = newValue }
            condition.broadcast()
        }
    }

    /// The bytes the decodes running now hold.
    var inUse: Int { withCondition { bytesInUse } }

    /// The most bytes the decodes ever held at once.
    var peakInUse: Int { withCondition { mostBytesInUse } }

    /// A claim a decode draws on while it is bound to ``Claim/current``; given back by ``Claim/releaseAll()``
    /// or when the claim goes. With `waits`, its first draw waits for room.
    func claim(waits: Bool) -> Claim {
        Claim(budget: self, waits: waits)
    }

    /// One decode's share of the budget.
    final class Claim: Sendable {
        /// The claim of the decode running on this thread (or task), if it runs under a budget.
        @TaskLocal static var current: Claim?

        private let budget: DecodeMemoryBudget
        private let waits: Bool
        private let held = Locked(0)

        init(budget: DecodeMemoryBudget, waits: Bool) {
            self.budget = budget
            self.waits = waits
        }

        deinit {
            releaseAll()
        }

        /// Makes the claim `bytes` in all (it never shrinks while the decode runs).
        func grow(to bytes: Int) throws(ImageCodecError) {
            let holding = held.withLock { $0 }
            guard bytes > holding else { return }
            try budget.take(bytes - holding, mayWait: waits && holding == 0)
            held.withLock { $0 = bytes }
        }

        func releaseAll() {
            let bytes = held.withLock { held in
                defer { held = 0 }
                return held
            }
            if bytes > 0 { budget.give(bytes) }
        }
    }

    private func take(_ bytes: Int, mayWait: Bool) throws(ImageCodecError) {
        let deadline = Date(timeIntervalSinceNow: Double(Self.maximumWait.components.seconds))
        condition.lock()
        defer { condition.unlock() }
        while bytesInUse + bytes > capacityBytes {
            // Room can only come from decodes that hold some; one larger than the whole budget never fits.
            guard mayWait, bytes <= capacityBytes, bytesInUse > 0, condition.wait(until: deadline) else {
                throw .limitExceeded(.decodeMemoryBudget(bytes))
            }
        }
        bytesInUse += bytes
        mostBytesInUse = max(mostBytesInUse, bytesInUse)
    }

    private func give(_ bytes: Int) {
        withCondition { bytesInUse -= bytes }
        condition.broadcast()
    }

    private func withCondition<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }
}
