import Foundation
@testable import ImageOriginServer
import Testing
import TestSupport

@Suite("Origin server: a shared network link")
struct OriginLinkTests {
    /// One timed exchange: when its request went out and when its whole response had arrived.
    private struct Timed: Sendable {
        var status: Int
        var bodyCount: Int
        var start: ContinuousClock.Instant
        var end: ContinuousClock.Instant
        var elapsed: Duration { end - start }
    }

    /// Sends a GET on `connection` and times it until the whole response has arrived.
    private func timedGet(_ connection: RawHTTPConnection, _ target: String) async throws -> Timed {
        try await offloaded {
            let start = ContinuousClock.now
            let response = try connection.request("GET", target)
            return Timed(status: response.status, bodyCount: response.body.count, start: start, end: ContinuousClock.now)
        }
    }

    /// Fetches every target at once, each on a connection of its own opened beforehand.
    private func concurrentGets(_ server: ImageOriginServer, _ targets: [String]) async throws -> [Timed] {
        let connections = try targets.map { _ in try RawHTTPConnection(port: server.port) }
        return try await withThrowingTaskGroup(of: (Int, Timed).self) { group in
            for (index, target) in targets.enumerated() {
                let connection = connections[index]
                group.addTask { (index, try await timedGet(connection, target)) }
            }
            var results = [Timed?](repeating: nil, count: targets.count)
            for try await (index, timed) in group { results[index] = timed }
            return results.compactMap { $0 }
        }
    }

    @Test("Two concurrent bodies on two connections share the downlink: each takes as long as both together")
    func fairShare() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(200_000), at: "/a.bin")
            server.setAsset(patternBytes(200_000, seed: 1), at: "/b.bin")
            server.setLink(OriginLink(downlinkBytesPerSecond: 400_000, roundTrip: .zero, connectionRoundTrips: 0))

            let alone = try await concurrentGets(server, ["/a.bin"])[0]
            #expect(alone.bodyCount == 200_000)
            // 200 kB alone at 400 kB/s: 0.5 s.
            #expect(alone.elapsed >= .milliseconds(430) && alone.elapsed <= .milliseconds(900), "alone took \(alone.elapsed)")

            let both = try await concurrentGets(server, ["/a.bin", "/b.bin"])
            // Half the link each: 1 s for both. A cap per response would finish each in 0.5 s, and a link that
            // served one body before the other would finish the first in 0.5 s.
            for timed in both {
                #expect(timed.bodyCount == 200_000)
                #expect(timed.elapsed >= .milliseconds(880) && timed.elapsed <= .milliseconds(1_500),
                        "one of two took \(timed.elapsed)")
            }
        }
    }

    @Test("A new connection pays its handshake round trips before its first response; a kept-alive one only the round trip")
    func connectionRoundTrips() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(100), at: "/a.jpg")
            server.setLink(OriginLink(downlinkBytesPerSecond: 0, roundTrip: .milliseconds(150), connectionRoundTrips: 2))

            let connection = try RawHTTPConnection(port: server.port)
            let first = try await timedGet(connection, "/a.jpg")
            let second = try await timedGet(connection, "/a.jpg")
            #expect(first.status == 200 && first.bodyCount == 100)
            #expect(second.status == 200 && second.bodyCount == 100)
            // (2 + 1) × 150 ms on the fresh connection, 150 ms on the kept-alive one.
            #expect(first.elapsed >= .milliseconds(400) && first.elapsed <= .milliseconds(800), "first took \(first.elapsed)")
            #expect(second.elapsed >= .milliseconds(140) && second.elapsed <= .milliseconds(380), "second took \(second.elapsed)")
            #expect(server.requestLog.map(\.connection) == [1, 1])
        }
    }

    @Test("A connection opened ahead of its first request has paid its handshake by then")
    func preconnectedConnection() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(100), at: "/a.jpg")
            server.setLink(OriginLink(downlinkBytesPerSecond: 0, roundTrip: .milliseconds(150), connectionRoundTrips: 2))
            let connection = try RawHTTPConnection(port: server.port)
            try await Task.sleep(for: .milliseconds(400))
            let first = try await timedGet(connection, "/a.jpg")
            #expect(first.elapsed >= .milliseconds(140) && first.elapsed <= .milliseconds(380), "took \(first.elapsed)")
        }
    }

    @Test("A route's first-byte latency adds to the link's round trip")
    func latencyAddsToRoundTrip() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(100), at: "/a.jpg")
            server.setShaping(OriginShaping(firstByteLatency: .milliseconds(200)), for: "/a.jpg")
            server.setLink(OriginLink(downlinkBytesPerSecond: 0, roundTrip: .milliseconds(150), connectionRoundTrips: 0))
            let connection = try RawHTTPConnection(port: server.port)
            let timed = try await timedGet(connection, "/a.jpg")
            #expect(timed.elapsed >= .milliseconds(340) && timed.elapsed <= .milliseconds(650), "took \(timed.elapsed)")
        }
    }

    @Test("Four concurrent bodies of N bytes in all finish in N / bandwidth, within 10 %, and are logged whole")
    func totalThroughput() async throws {
        try await withOrigin { server in
            let sizes = [100_000, 150_000, 250_000, 300_000]
            for (index, size) in sizes.enumerated() {
                server.setAsset(patternBytes(size, seed: UInt8(index)), at: "/\(index).bin")
            }
            server.setLink(OriginLink(downlinkBytesPerSecond: 400_000, roundTrip: .zero, connectionRoundTrips: 0))

            let results = try await concurrentGets(server, sizes.indices.map { "/\($0).bin" })
            let total = sizes.reduce(0, +)
            #expect(results.map(\.bodyCount) == sizes)
            let start = try #require(results.map(\.start).min())
            let end = try #require(results.map(\.end).max())
            // 800 kB at 400 kB/s: 2 s.
            #expect(end - start >= .milliseconds(1_800) && end - start <= .milliseconds(2_200), "took \(end - start)")

            try await server.waitForCompletedRequests(count: sizes.count, timeout: .seconds(5))
            #expect(server.requestLog.map(\.bytesSent).reduce(0, +) == total)
            #expect(server.requestLog.allSatisfy { $0.isComplete && !$0.clientWentAway })
        }
    }

    @Test("A response's own bandwidth cap still holds under the link, and leaves its unused share to the others")
    func ownCapWithinLink() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(50_000), at: "/slow.bin")
            server.setAsset(patternBytes(300_000, seed: 1), at: "/fast.bin")
            server.setShaping(OriginShaping(bytesPerSecond: 50_000), for: "/slow.bin")
            server.setLink(OriginLink(downlinkBytesPerSecond: 400_000, roundTrip: .zero, connectionRoundTrips: 0))

            let results = try await concurrentGets(server, ["/slow.bin", "/fast.bin"])
            // The capped body takes its own 1 s; the other gets the 350 kB/s it leaves: 0.86 s, not the 1.5 s
            // an equal split would give it, nor the 0.75 s of a link that did not count the capped body at all.
            #expect(results[0].elapsed >= .milliseconds(900), "the capped body took \(results[0].elapsed)")
            #expect(results[1].elapsed >= .milliseconds(800) && results[1].elapsed <= .milliseconds(1_200),
                    "the other took \(results[1].elapsed)")
        }
    }

    @Test("A loss-like stall pauses a body once for the stall's duration, and the body still arrives intact")
    func stall() async throws {
        try await withOrigin { server in
            let asset = patternBytes(100_000)
            server.setAsset(asset, at: "/a.bin")
            server.setLink(OriginLink(downlinkBytesPerSecond: 0, roundTrip: .zero, connectionRoundTrips: 0,
                                      stallProbability: 1, stallDuration: .milliseconds(400)))
            let connection = try RawHTTPConnection(port: server.port)
            let response = try await offloaded { () -> ([UInt8], Duration) in
                let start = ContinuousClock.now
                let response = try connection.request("GET", "/a.bin")
                return (response.body, ContinuousClock.now - start)
            }
            #expect(byteMismatch(response.0, asset) == nil)
            #expect(response.1 >= .milliseconds(390) && response.1 <= .milliseconds(900), "took \(response.1)")

            server.setLink(OriginLink(downlinkBytesPerSecond: 0, roundTrip: .zero, connectionRoundTrips: 0))
            let quick = try await timedGet(connection, "/a.bin")
            #expect(quick.bodyCount == 100_000 && quick.elapsed < .milliseconds(300), "without stalls took \(quick.elapsed)")
        }
    }

    @Test("Jitter is drawn from the seed: a seeded link delays a response by the same amount on every run")
    func seededJitter() async throws {
        let link = OriginLink(downlinkBytesPerSecond: 0, roundTrip: .zero, connectionRoundTrips: 0,
                              jitter: .milliseconds(400), seed: 7)
        let draws = OriginLinkDraws(link: link, connection: 1, response: 0)
        #expect(draws == OriginLinkDraws(link: link, connection: 1, response: 0))
        #expect(draws != OriginLinkDraws(link: link, connection: 2, response: 0))
        #expect(draws.jitter > .zero && draws.jitter <= .milliseconds(400))

        try await withOrigin { server in
            server.setAsset(patternBytes(100), at: "/a.jpg")
            server.setLink(link)
            let connection = try RawHTTPConnection(port: server.port)  // the server's first connection: number 1
            let timed = try await timedGet(connection, "/a.jpg")
            #expect(timed.elapsed >= draws.jitter - .milliseconds(10), "took \(timed.elapsed), drew \(draws.jitter)")
            #expect(timed.elapsed <= draws.jitter + .milliseconds(250), "took \(timed.elapsed), drew \(draws.jitter)")
        }
    }

    @Test("The presets carry their published figures")
    func presets() {
        #expect(OriginLink.wifi.downlinkBytesPerSecond == 3_932_160 && OriginLink.wifi.roundTrip == .milliseconds(2))
        #expect(OriginLink.lte.downlinkBytesPerSecond == 1_012_500 && OriginLink.lte.roundTrip == .milliseconds(60))
        #expect(OriginLink.slow4G.downlinkBytesPerSecond == 209_715 && OriginLink.slow4G.roundTrip == .milliseconds(150))
        #expect(OriginLink.threeG.downlinkBytesPerSecond == 50_000 && OriginLink.threeG.roundTrip == .milliseconds(400))
        for preset in [OriginLink.wifi, .lte, .slow4G, .threeG] {
            #expect(preset.connectionRoundTrips == 2 && preset.jitter == .zero && preset.stallProbability == 0)
        }
    }
}
