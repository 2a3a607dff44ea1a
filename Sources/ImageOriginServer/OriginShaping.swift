/// How fast an ``ImageOriginServer`` answers: a bandwidth cap on response bodies and a delay before the
/// response head, globally or for one route (``ImageOriginServer/setShaping(_:for:)``).
///
/// Shaping never sleeps a thread: the body goes out in small chunks timed on the connection's event loop
/// (one tick every 10 ms, a token bucket that allows at most 100 ms of burst), and the latency is a timer.
/// The cap applies to each response on its own, not to the server as a whole; for one bandwidth shared by
/// every response, and round trips per connection, see ``OriginLink`` (the two combine).
public struct OriginShaping: Sendable, Hashable {
    /// The most body bytes per second one response sends; `nil` sends as fast as the client reads.
    public var bytesPerSecond: Int?
    /// The delay between the end of the request and the response head (time to first byte).
    public var firstByteLatency: Duration

    /// - Parameters:
    ///   - bytesPerSecond: the body bandwidth of one response; `nil` (or less than 1) means unlimited.
    ///   - firstByteLatency: how long to wait before sending the response head; negative means none.
    public init(bytesPerSecond: Int? = nil, firstByteLatency: Duration = .zero) {
        self.bytesPerSecond = bytesPerSecond.flatMap { $0 > 0 ? $0 : nil }
        self.firstByteLatency = max(firstByteLatency, .zero)
    }

    /// No shaping: bodies as fast as the client reads, the head at once.
    public static let none = OriginShaping()
}
