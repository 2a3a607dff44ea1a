/// A simulated network link between an ``ImageOriginServer`` and all of its clients, set with
/// ``ImageOriginServer/setLink(_:)``: one downlink whose bandwidth every response shares, a round trip before
/// each response head, the handshake round trips each new connection pays once, and optionally jitter and
/// loss-like stalls.
///
/// ```swift
/// server.setLink(.lte)                       // Chrome DevTools' "Fast 4G"
/// var flaky = OriginLink.threeG
/// flaky.stallProbability = 0.05
/// flaky.stallDuration = .seconds(1)
/// flaky.seed = 42                            // the same draws on every run
/// server.setLink(flaky)
/// ```
///
/// What a client sees, given the server's per-route ``OriginShaping`` as well:
/// - **Downlink.** ``downlinkBytesPerSecond`` is divided fairly among every response that is sending body
///   bytes at that moment, on every connection: two concurrent bodies get half each, a response held back by
///   its own ``OriginShaping/bytesPerSecond`` or by a client that is not reading leaves its unused share to
///   the others (max-min fairness). A response obeys both its own cap and its share of the link.
/// - **Round trip.** Each response head waits ``roundTrip`` after its request (the request going up and the
///   first byte coming down), plus a random part of ``jitter``, plus the route's
///   ``OriginShaping/firstByteLatency`` (the server's own time to answer adds to the network's).
/// - **New connections.** A connection's first response also waits until ``connectionRoundTrips`` round trips
///   have passed since the connection was accepted, the time a TCP (and TLS) handshake takes. A client that
///   sends its request as soon as it connects therefore gets its first head after
///   `(connectionRoundTrips + 1) × roundTrip`, and later ones on the same kept-alive connection after one
///   round trip; a connection opened well ahead of its first request has paid its handshake by then, as on a
///   real network. (The kernel's handshake itself is not delayed: the wait is added before the head.)
/// - **Stalls.** With ``stallProbability`` per response, the body pauses once, at a random point, for
///   ``stallDuration``, as a TCP connection does while it waits out a retransmission timeout; the other
///   responses share the link meanwhile.
///
/// Not modelled: TCP slow start and congestion windows (a body gets its full share from its first byte),
/// packet-level loss and reordering, the uplink (requests are not delayed by their size), and a bandwidth
/// that changes over time. See `docs/network-model.md`.
///
/// The presets take their figures from published browser throttling profiles. Where a profile's latency
/// includes a factor that stands in for connection set-up (DevTools applies its latency once per request and
/// has no connection model), the preset uses the profile's underlying round-trip time and models the
/// handshakes with ``connectionRoundTrips`` instead. Every preset emulates TLS (2 connection round trips),
/// because images are served over HTTPS.
public struct OriginLink: Sendable, Hashable {
    /// The downlink's bandwidth in bytes per second, shared by every response sending a body; 0 means no
    /// bandwidth limit (the link adds latency only).
    public var downlinkBytesPerSecond: Int
    /// The round-trip time: the wait between a request and its response head.
    public var roundTrip: Duration
    /// The extra round trips a new connection pays once before its first response: 1 for TCP's handshake,
    /// 2 with a TLS 1.3 handshake on top (the presets), 3 for TLS 1.2; 0 for none.
    public var connectionRoundTrips: Int
    /// The most extra delay, drawn uniformly for each response, added to its round trip; zero for none.
    public var jitter: Duration
    /// The chance, from 0 to 1, that a response's body pauses once for ``stallDuration``.
    public var stallProbability: Double
    /// How long a stalled body pauses (a retransmission timeout is typically 200 ms to 1 s).
    public var stallDuration: Duration
    /// The seed of the jitter and stall draws, so that a run can be repeated: each response's draws depend
    /// only on the seed, its connection's number (connections are numbered in the order they are accepted)
    /// and its place on that connection. `nil` draws from the system's random source.
    public var seed: UInt64?

    /// - Parameters:
    ///   - downlinkBytesPerSecond: the shared downlink bandwidth; less than 1 means unlimited.
    ///   - roundTrip: the wait before each response head; negative means none.
    ///   - connectionRoundTrips: the round trips a new connection pays before its first response; negative
    ///     means none. The default, 2, is a TCP handshake followed by a TLS 1.3 one.
    ///   - jitter: the most random extra delay per response head; negative means none.
    ///   - stallProbability: the chance per response of one mid-body pause, clamped to 0...1.
    ///   - stallDuration: the length of that pause; negative means none.
    ///   - seed: makes the random draws repeatable; `nil` for the system's random source.
    public init(downlinkBytesPerSecond: Int, roundTrip: Duration, connectionRoundTrips: Int = 2,
                jitter: Duration = .zero, stallProbability: Double = 0, stallDuration: Duration = .zero,
                seed: UInt64? = nil) {
        self.downlinkBytesPerSecond = max(downlinkBytesPerSecond, 0)
        self.roundTrip = max(roundTrip, .zero)
        self.connectionRoundTrips = max(connectionRoundTrips, 0)
        self.jitter = max(jitter, .zero)
        self.stallProbability = stallProbability.isNaN ? 0 : min(max(stallProbability, 0), 1)
        self.stallDuration = max(stallDuration, .zero)
        self.seed = seed
    }

    // MARK: Presets

    /// Wi-Fi: 30 Mbit/s down (3,932,160 bytes/s) and a 2 ms round trip, Firefox DevTools' "Wi-Fi" throttling
    /// profile (`devtools/client/shared/components/throttling/profiles.js` in Firefox; its documentation's
    /// throttling table lists the same figures). Firefox counts a megabit as 1024 × 1024 bits.
    public static let wifi = OriginLink(downlinkBytesPerSecond: 3_932_160, roundTrip: .milliseconds(2))

    /// LTE, a good 4G connection: 1,012,500 bytes/s down and a 60 ms round trip, Chrome DevTools' "Fast 4G"
    /// preset (`Fast4GConditions` in `front_end/core/sdk/NetworkManager.ts`): 9 Mbit/s times DevTools'
    /// throughput factor of 0.9. DevTools applies 165 ms per request, its 60 ms target RTT times 2.75 to stand
    /// in for connection set-up; here the 60 ms is the round trip and the handshakes are modelled.
    public static let lte = OriginLink(downlinkBytesPerSecond: 1_012_500, roundTrip: .milliseconds(60))

    /// Slow 4G: 1638.4 kbit/s down (209,715 bytes/s) and a 150 ms round trip, Lighthouse's default mobile
    /// throttling (`mobileSlow4G` in `core/config/constants.js`: `rttMs: 150`, `throughputKbps: 1.6 * 1024`,
    /// a kilobit being 1024 bits in its simulator), which Lighthouse says matches roughly the 75th percentile
    /// of 4G connections. Chrome DevTools' "Slow 4G" preset starts from the same 150 ms and 1.6 Mbit/s but
    /// applies 562.5 ms per request and 180,000 bytes/s (its factors of 3.75 and 0.9).
    public static let slow4G = OriginLink(downlinkBytesPerSecond: 209_715, roundTrip: .milliseconds(150))

    /// 3G: 50,000 bytes/s down and a 400 ms round trip, Chrome DevTools' "3G" preset (called "Slow 3G" before
    /// 2024; `Slow3GConditions` in `front_end/core/sdk/NetworkManager.ts`): 500 kbit/s times DevTools'
    /// factor of 0.8. DevTools applies 2000 ms per request, its 400 ms target RTT times 5 to stand in for
    /// connection set-up; here the 400 ms is the round trip and the handshakes are modelled.
    public static let threeG = OriginLink(downlinkBytesPerSecond: 50_000, roundTrip: .milliseconds(400))
}
