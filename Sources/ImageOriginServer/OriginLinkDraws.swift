/// The random parts of one response on an ``OriginLink``: its extra delay and whether, and where, its body
/// stalls. Drawn once, when the response is planned.
///
/// With a seed, the draws come from a generator seeded by the link's seed, the connection's number and the
/// response's place on that connection, not from one generator shared by the whole server: responses on
/// different event loops are planned in an order that varies from run to run, and a shared sequence would
/// hand them different draws each time.
struct OriginLinkDraws: Equatable {
    /// Added to the round trip before the response head.
    var jitter: Duration
    /// Where the body pauses, as a fraction of it in `0..<1`; `nil` when this response does not stall.
    var stallFraction: Double?

    init(link: OriginLink, connection: Int, response: Int) {
        if let seed = link.seed {
            var generator = SplitMix64(seed: seed, connection: connection, response: response)
            self.init(link: link, using: &generator)
        } else {
            var generator = SystemRandomNumberGenerator()
            self.init(link: link, using: &generator)
        }
    }

    private init(link: OriginLink, using generator: inout some RandomNumberGenerator) {
        // Both draws are always taken, so a seeded response gets the same stall whatever its jitter setting.
        let jitterDraw = Double.random(in: 0...1, using: &generator)
        let stallDraw = Double.random(in: 0..<1, using: &generator)
        let positionDraw = Double.random(in: 0..<1, using: &generator)
        jitter = link.jitter > .zero ? link.jitter * jitterDraw : .zero
        stallFraction = link.stallDuration > .zero && stallDraw < link.stallProbability ? positionDraw : nil
    }

    /// The body offset (within `bodyRange`) where the stall happens: after the first byte and before the last,
    /// so the client sees a body that has started and then pauses. `nil` without a stall or for a body too
    /// short to pause inside.
    func stallOffset(in bodyRange: Range<Int>) -> Int? {
        guard let stallFraction, bodyRange.count >= 2 else { return nil }
        let inside = 1 + Int(stallFraction * Double(bodyRange.count - 1))
        return bodyRange.lowerBound + min(inside, bodyRange.count - 1)
    }
}

/// SplitMix64 (Steele, Lea and Flood, 2014): small, fast, and good enough for jitter; seeded from the three
/// numbers that identify a response so its draws do not depend on what other responses drew.
private struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64, connection: Int, response: Int) {
        state = seed
        state = Self.mix(state ^ Self.mix(UInt64(truncatingIfNeeded: connection) &+ 0x9E37_79B9_7F4A_7C15))
        state = Self.mix(state ^ Self.mix(UInt64(truncatingIfNeeded: response) &+ 0xD1B5_4A32_D192_ED03))
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return Self.mix(state)
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
