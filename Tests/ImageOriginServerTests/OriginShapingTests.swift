import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ImageOriginServer
import Testing
import TestSupport

@Suite("Origin server: bandwidth, latency and back-pressure")
struct OriginShapingTests {
    /// Sends a GET on a connection opened beforehand and times it until the whole response has arrived, so
    /// neither connection set-up nor a client library's own overhead is counted.
    private func timedGet(_ server: ImageOriginServer, _ target: String) async throws -> (RawHTTPConnection.Response, Duration) {
        let connection = try RawHTTPConnection(port: server.port)
        return try await offloaded {
            let start = ContinuousClock.now
            let response = try connection.request("GET", target)
            return (response, ContinuousClock.now - start)
        }
    }

    @Test("A 100 KB asset at 200 KB/s takes at least 0.4 s and arrives intact")
    func bandwidth() async throws {
        try await withOrigin { server in
            let asset = patternBytes(100_000)
            server.setAsset(asset, at: "/a.jpg")
            server.setShaping(OriginShaping(bytesPerSecond: 200_000), for: "/a.jpg")
            let (response, elapsed) = try await timedGet(server, "/a.jpg")
            #expect(byteMismatch(response.body, asset) == nil)
            #expect(elapsed >= .milliseconds(400), "took \(elapsed)")
        }
    }

    @Test("A shaped asset also arrives intact through URLSession")
    func bandwidthURLSession() async throws {
        try await withOrigin { server in
            let asset = patternBytes(50_000)
            server.setAsset(asset, at: "/a.jpg")
            server.setShaping(OriginShaping(bytesPerSecond: 200_000), for: "/a.jpg")
            let (data, response) = try await fetch(server.url(for: "/a.jpg"))
            #expect(response.statusCode == 200)
            #expect(byteMismatch(data, asset) == nil)
        }
    }

    @Test("Global shaping applies to every route without its own")
    func globalBandwidth() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(60_000), at: "/b.jpg")
            server.setShaping(OriginShaping(bytesPerSecond: 100_000), for: nil)
            let (response, elapsed) = try await timedGet(server, "/b.jpg")
            #expect(response.body.count == 60_000)
            #expect(elapsed >= .milliseconds(500), "took \(elapsed)")
        }
    }

    @Test("First-byte latency delays the response head by at least the latency")
    func latency() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(100), at: "/a.jpg")
            server.setShaping(OriginShaping(firstByteLatency: .milliseconds(300)), for: "/a.jpg")
            let (response, elapsed) = try await timedGet(server, "/a.jpg")
            #expect(response.status == 200 && response.body.count == 100)
            #expect(elapsed >= .milliseconds(300), "took \(elapsed)")
        }
    }

    @Test("Latency applies to 404s of a shaped route too, and to every route when global")
    func globalLatency() async throws {
        try await withOrigin { server in
            server.setShaping(OriginShaping(firstByteLatency: .milliseconds(300)), for: nil)
            let (response, elapsed) = try await timedGet(server, "/missing")
            #expect(response.status == 404)
            #expect(elapsed >= .milliseconds(300), "took \(elapsed)")
        }
    }

    @Test("Back-pressure: a 20 MB body to a client that stops reading is not queued whole in the server")
    func backPressure() async throws {
        try await withOrigin { server in
            let size = 20 * 1024 * 1024
            let asset = patternBytes(size)
            server.setAsset(asset, at: "/big.bin")
            let connection = try RawHTTPConnection(port: server.port)
            connection.setReceiveBuffer(64 * 1024)
            try await offloaded { try connection.sendRequest("GET", "/big.bin") }
            // Let the server fill every buffer it can while the client reads nothing: wait until the bytes the
            // kernel has taken stop growing for 200 ms (bounded, so a broken server fails instead of hanging).
            var settled: (bytes: Int, since: ContinuousClock.Instant)?
            let deadline = ContinuousClock.now + .seconds(15)
            while ContinuousClock.now < deadline {
                let bytes = server.requestLog.first?.bytesSent ?? -1
                if bytes > 0, let previous = settled, previous.bytes == bytes {
                    if ContinuousClock.now - previous.since >= .milliseconds(200) { break }
                } else {
                    settled = (bytes, ContinuousClock.now)
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            let whileBlocked = try #require(server.requestLog.first)
            #expect(!whileBlocked.isComplete)
            #expect(whileBlocked.bytesSent < size / 2, "the kernel took \(whileBlocked.bytesSent) bytes")
            #expect(whileBlocked.peakQueuedBytes <= 256 * 1024, "queued \(whileBlocked.peakQueuedBytes) bytes")

            let response = try await offloaded { try connection.readResponse() }
            #expect(response.ending == .complete)
            let mismatch = byteMismatch(response.body, asset)  // a local: the failure message must not print 20 MB
            #expect(mismatch == nil)
            try await server.waitForCompletedRequests(count: 1, timeout: .seconds(10))
            let done = try #require(server.requestLog.first)
            #expect(done.bytesSent == size)
            #expect(done.peakQueuedBytes <= 256 * 1024, "queued \(done.peakQueuedBytes) bytes")
        }
    }
}
