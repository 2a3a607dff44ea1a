import NIOCore

/// The response in progress on one connection of the origin. Confined to the connection's event loop, like
/// its ``OriginHTTPHandler``, so its state needs no lock.
final class OriginExchange {
    let sequence: Int
    let receivedAt: NIODeadline
    var plan: OriginResponsePlan?
    var nextOffset = 0
    var confirmedBytes = 0
    /// The most body bytes written to the channel but not yet taken by the kernel.
    var peakQueued = 0
    var headSent = false
    var bodyEnded = false
    var isComplete = false
    var pendingHead: Scheduled<Void>?
    var pendingTick: Scheduled<Void>?
    /// The future of the last write, which the kernel has taken once it succeeds.
    var lastWrite: EventLoopFuture<Void>?
    /// Shaping: bytes allowed now, and when they were last topped up.
    var credit = 0.0
    var refilledAt = NIODeadline.now()
    /// The response's place on the server's shared downlink while it sends a body over a link.
    var flow: OriginDownlink.Flow?
    /// Where the link's loss-like stall pauses the body, until it has; and for how long.
    var stallOffset: Int?
    var stallDuration = Duration.zero
    var isStalled = false

    init(sequence: Int, receivedAt: NIODeadline) {
        self.sequence = sequence
        self.receivedAt = receivedAt
    }

    func cancelTimers() {
        pendingHead?.cancel()
        pendingTick?.cancel()
        pendingHead = nil
        pendingTick = nil
    }
}
