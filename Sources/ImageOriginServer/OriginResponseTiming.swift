import NIOCore

/// When one response's head may go out, and where and for how long its body stalls: the route's first-byte
/// latency plus, on a link, its round trip, jitter, stall and (for a connection's first response) handshake;
/// a scripted pause (``OriginFault/pauseAfterBytes(_:for:)``) is a stall at a known place.
/// Pure: decided once, when the response is planned.
struct OriginResponseTiming {
    /// The head is sent at this time, or at once if it has passed.
    var headDeadline: NIODeadline
    /// The body offset where the body pauses; `nil` for no stall.
    var stallOffset: Int?
    var stallDuration: Duration = .zero

    /// - Parameters:
    ///   - receivedAt: when the request's end was read.
    ///   - acceptedAt: when its connection was accepted.
    ///   - connection: the connection's number; `response`: how many responses it has begun before this one.
    init(plan: OriginResponsePlan, link: OriginLink?, receivedAt: NIODeadline, acceptedAt: NIODeadline,
         connection: Int, response: Int) {
        var start = receivedAt
        // The server's own time to answer adds to the network's.
        var latency = plan.shaping.firstByteLatency
        if let link {
            let draws = OriginLinkDraws(link: link, connection: connection, response: response)
            if response == 0 {
                // The request could not have been sent before the handshake ended, so one that arrived sooner is
                // answered as if it had been sent then; a connection opened long before has paid it already.
                start = max(start, acceptedAt + TimeAmount(link.roundTrip * link.connectionRoundTrips))
            }
            latency += link.roundTrip + draws.jitter
            stallOffset = draws.stallOffset(in: plan.bodyRange)
            stallDuration = link.stallDuration
        }
        if let pause = plan.pause, pause.afterBytes < plan.bodyRange.count {
            // A scripted pause replaces the link's random stall: a body pauses once.
            stallOffset = plan.bodyRange.lowerBound + pause.afterBytes
            stallDuration = pause.duration
        }
        headDeadline = start + TimeAmount(latency)
    }
}

extension TimeAmount {
    /// `duration` to the nanosecond.
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
