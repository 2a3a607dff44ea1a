import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ImageOriginServer
import Testing
import TestSupport

@Suite("Origin server: scripted faults")
struct OriginFaultTests {
    static let asset = patternBytes(5000)

    /// A server with `/a.jpg` (5000 bytes) and `faults` on it.
    @discardableResult
    private func withFaultyOrigin<T>(_ faults: [OriginFault], count: Int? = nil,
                                     _ body: (ImageOriginServer) async throws -> T) async throws -> T {
        try await withOrigin { server in
            server.setAsset(Self.asset, at: "/a.jpg", contentType: "image/jpeg")
            server.setFaults(faults, for: "/a.jpg", count: count)
            return try await body(server)
        }
    }

    @Test("closeAfterBytes: the client sees the full Content-Length, exactly N body bytes, then end of stream")
    func closeAfterBytes() async throws {
        try await withFaultyOrigin([.closeAfterBytes(1000)]) { server in
            let connection = try RawHTTPConnection(port: server.port)
            let response = try await offloaded { try connection.request("GET", "/a.jpg") }
            #expect(response.status == 200)
            #expect(response.contentLength == 5000)
            #expect(byteMismatch(response.body, Array(Self.asset.prefix(1000))) == nil)
            #expect(response.ending == .eof)
            try await server.waitForCompletedRequests(count: 1, timeout: .seconds(5))
            let record = try #require(server.requestLog.first)
            #expect(record.bytesSent == 1000 && !record.clientWentAway)
        }
    }

    @Test("closeAfterBytes counts bytes of the ranged body: bytes=2000- cut after 500 ends at offset 2500")
    func closeAfterBytesWithRange() async throws {
        try await withFaultyOrigin([.closeAfterBytes(500)]) { server in
            let connection = try RawHTTPConnection(port: server.port)
            let response = try await offloaded { try connection.request("GET", "/a.jpg", headers: [("Range", "bytes=2000-")]) }
            #expect(response.status == 206)
            #expect(byteMismatch(response.body, Array(Self.asset[2000..<2500])) == nil)
            #expect(response.ending == .eof)
        }
    }

    @Test("closeAfterBytes makes URLSession fail the transfer")
    func closeAfterBytesURLSession() async throws {
        try await withFaultyOrigin([.closeAfterBytes(1000)]) { server in
            await #expect(throws: (any Error).self) {
                _ = try await fetch(server.url(for: "/a.jpg"))
            }
        }
    }

    @Test("resetAfterBytes: the connection is aborted with a TCP RST, no more than N bytes arrive")
    func resetAfterBytes() async throws {
        try await withFaultyOrigin([.resetAfterBytes(1000)]) { server in
            let connection = try RawHTTPConnection(port: server.port)
            let (head, rest) = try await offloaded { () -> (RawHTTPConnection.Response, (bytes: [UInt8], ending: RawHTTPConnection.Ending)) in
                let head = try connection.readResponseHead(afterSending: "/a.jpg")
                return (head, connection.readToEnd())
            }
            #expect(head.status == 200)
            #expect(rest.ending == .reset)
            #expect(rest.bytes.count <= 1000)
            #expect(byteMismatch(rest.bytes, Array(Self.asset.prefix(rest.bytes.count))) == nil)
            try await server.waitForCompletedRequests(count: 1, timeout: .seconds(5))
            #expect(server.requestLog.first?.bytesSent == 1000)
        }
    }

    @Test("stallAfterBytes: N bytes arrive, then silence with the connection open until the client leaves")
    func stallAfterBytes() async throws {
        try await withFaultyOrigin([.stallAfterBytes(1000)]) { server in
            let connection = try RawHTTPConnection(port: server.port)
            let (head, body, silence) = try await offloaded {
                let head = try connection.readResponseHead(afterSending: "/a.jpg")
                let body = connection.read(count: 1000)
                // Then nothing more: half a second of silence, the connection still open.
                connection.setReceiveTimeout(0.5)
                return (head, body, connection.readSome())
            }
            #expect(head.contentLength == 5000)
            #expect(byteMismatch(body, Self.asset.prefix(1000)) == nil)
            #expect(silence.bytes.isEmpty && silence.ending == .timeout)
            #expect(server.openConnectionCount == 1)
            #expect(server.requestLog.first?.isComplete == false)

            connection.close()
            try await server.waitForCompletedRequests(count: 1, timeout: .seconds(5))
            let record = try #require(server.requestLog.first)
            #expect(record.clientWentAway)
            #expect(record.bytesSent == 1000)
        }
    }

    @Test("pauseAfterBytes: N bytes arrive, then silence, then the rest of the body on the same response")
    func pauseAfterBytes() async throws {
        try await withFaultyOrigin([.pauseAfterBytes(1000, for: .seconds(1))]) { server in
            let connection = try RawHTTPConnection(port: server.port)
            let (head, first, silence, rest) = try await offloaded {
                let head = try connection.readResponseHead(afterSending: "/a.jpg")
                let first = connection.read(count: 1000)
                // A third of the pause: nothing comes.
                connection.setReceiveTimeout(0.3)
                let silence = connection.readSome()
                // Then the other 4000 bytes, well within a few seconds.
                connection.setReceiveTimeout(5)
                return (head, first, silence, connection.read(count: 4000))
            }
            #expect(head.contentLength == 5000)
            #expect(byteMismatch(first, Self.asset.prefix(1000)) == nil)
            #expect(silence.bytes.isEmpty && silence.ending == .timeout)
            #expect(byteMismatch(first + rest, Array(Self.asset)) == nil)
            try await server.waitForCompletedRequests(count: 1, timeout: .seconds(5))
            #expect(server.requestLog.first?.bytesSent == 5000)
        }
    }

    @Test("stallAfterBytes makes URLSession time out")
    func stallURLSession() async throws {
        try await withFaultyOrigin([.stallAfterBytes(100)]) { server in
            let start = ContinuousClock.now
            await #expect(throws: (any Error).self) {
                _ = try await fetch(server.url(for: "/a.jpg"), session: makeSession(timeout: 1))
            }
            #expect(ContinuousClock.now - start >= .milliseconds(900))
        }
    }

    @Test("A stalled exchange is completed, not counted as the client leaving, when the server shuts down")
    func stallEndsAtShutdown() async throws {
        let server = try await ImageOriginServer.start(port: 0)
        server.setAsset(Self.asset, at: "/a.jpg")
        server.setFaults([.stallAfterBytes(10)], for: "/a.jpg")
        let connection = try RawHTTPConnection(port: server.port, receiveTimeout: 3)
        let response = try await offloaded { try connection.request("GET", "/a.jpg") }
        #expect(response.body.count == 10)
        // Generous from here: the end of stream must come, and a loaded machine may take seconds to deliver it.
        connection.setReceiveTimeout(10)
        try await server.shutdown()
        let record = try #require(server.requestLog.first)
        #expect(record.isComplete && !record.clientWentAway)
        let rest = try await offloaded { connection.readToEnd() }
        #expect(rest.ending == .eof || rest.ending == .reset)
    }

    @Test("wrongContentLength: the declared length (longer or shorter) is not the 5000 bytes sent, then end of stream",
          arguments: [6000, 100])
    func wrongContentLength(declared: Int) async throws {
        try await withFaultyOrigin([.wrongContentLength(declared)]) { server in
            let connection = try RawHTTPConnection(port: server.port, receiveTimeout: 2)
            let (head, rest) = try await offloaded { () -> (RawHTTPConnection.Response, (bytes: [UInt8], ending: RawHTTPConnection.Ending)) in
                let head = try connection.readResponseHead(afterSending: "/a.jpg")
                return (head, connection.readToEnd())
            }
            #expect(head.contentLength == declared)
            #expect(byteMismatch(rest.bytes, Array(Self.asset)) == nil)
            #expect(rest.ending == .eof)
        }
    }

    @Test("ignoreRange: a Range request gets 200 and the whole body")
    func ignoreRange() async throws {
        try await withFaultyOrigin([.ignoreRange]) { server in
            let (data, response) = try await fetch(server.url(for: "/a.jpg"), headers: ["Range": "bytes=100-"])
            #expect(response.statusCode == 200)
            #expect(byteMismatch(data, Self.asset) == nil)
        }
    }

    @Test("noValidators: no ETag or Last-Modified, and If-Range then gets the full body")
    func noValidators() async throws {
        try await withFaultyOrigin([.noValidators]) { server in
            let (_, plain) = try await fetch(server.url(for: "/a.jpg"))
            #expect(plain.value(forHTTPHeaderField: "ETag") == nil)
            #expect(plain.value(forHTTPHeaderField: "Last-Modified") == nil)
            let etag = try #require(server.etag(at: "/a.jpg"))
            let (data, ranged) = try await fetch(server.url(for: "/a.jpg"), headers: ["Range": "bytes=100-", "If-Range": etag])
            #expect(ranged.statusCode == 200)
            #expect(byteMismatch(data, Self.asset) == nil)
            let (partial, unconditional) = try await fetch(server.url(for: "/a.jpg"), headers: ["Range": "bytes=100-"])
            #expect(unconditional.statusCode == 206)
            #expect(byteMismatch(partial, Self.asset[100...]) == nil)
        }
    }

    @Test("chunkedTransfer: no Content-Length, Transfer-Encoding chunked, and the client still gets every byte")
    func chunkedTransfer() async throws {
        try await withFaultyOrigin([.chunkedTransfer]) { server in
            let connection = try RawHTTPConnection(port: server.port, receiveTimeout: 2)
            let head = try await offloaded { try connection.readResponseHead(afterSending: "/a.jpg") }
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == nil)
            #expect(head.header("Transfer-Encoding") == "chunked")
            let (data, response) = try await fetch(server.url(for: "/a.jpg"))
            #expect(response.statusCode == 200)
            #expect(byteMismatch(data, Self.asset) == nil)
            let (partial, ranged) = try await fetch(server.url(for: "/a.jpg"), headers: ["Range": "bytes=4000-"])
            #expect(ranged.statusCode == 206)
            #expect(byteMismatch(partial, Self.asset[4000...]) == nil)
        }
    }

    @Test("noAcceptRanges: no Accept-Ranges header")
    func noAcceptRanges() async throws {
        try await withFaultyOrigin([.noAcceptRanges]) { server in
            let (_, response) = try await fetch(server.url(for: "/a.jpg"))
            #expect(response.statusCode == 200)
            #expect(response.value(forHTTPHeaderField: "Accept-Ranges") == nil)
            #expect(response.value(forHTTPHeaderField: "ETag") != nil)
        }
    }

    @Test("status: the override status and a small body replace the asset, on a missing route too",
          arguments: [500, 404, 503, 429])
    func statusOverride(code: Int) async throws {
        try await withFaultyOrigin([.status(code)]) { server in
            server.setFaults([.status(code)], for: "/missing.jpg")
            for path in ["/a.jpg", "/missing.jpg"] {
                let (data, response) = try await fetch(server.url(for: path))
                #expect(response.statusCode == code)
                #expect(data.count < 100 && data != Self.asset.prefix(data.count))
            }
        }
    }

    @Test("redirect: the status and Location are sent; URLSession follows to the target",
          arguments: [301, 302, 307])
    func redirect(code: Int) async throws {
        try await withFaultyOrigin([.redirect(to: "/b.jpg", status: code)]) { server in
            server.setAsset(patternBytes(300, seed: 4), at: "/b.jpg")
            let connection = try RawHTTPConnection(port: server.port)
            let raw = try await offloaded { try connection.request("GET", "/a.jpg") }
            #expect(raw.status == code)
            #expect(raw.header("Location") == "/b.jpg")
            let (data, response) = try await fetch(server.url(for: "/a.jpg"))
            #expect(response.statusCode == 200)
            #expect(byteMismatch(data, patternBytes(300, seed: 4)) == nil)
        }
    }

    @Test("A fault with count 1 fails only the next request: the retry succeeds")
    func countedFault() async throws {
        try await withFaultyOrigin([.status(503)], count: 1) { server in
            let (_, first) = try await fetch(server.url(for: "/a.jpg"))
            let (data, second) = try await fetch(server.url(for: "/a.jpg"))
            #expect(first.statusCode == 503)
            #expect(second.statusCode == 200)
            #expect(byteMismatch(data, Self.asset) == nil)
        }
    }

    @Test("Faults set and cleared while the server runs apply from the next request")
    func setAndClearWhileRunning() async throws {
        try await withOrigin { server in
            server.setAsset(Self.asset, at: "/a.jpg")
            let (_, before) = try await fetch(server.url(for: "/a.jpg"))
            server.setFaults([.status(500)], for: "/a.jpg")
            let (_, during) = try await fetch(server.url(for: "/a.jpg"))
            let (_, still) = try await fetch(server.url(for: "/a.jpg"))
            server.clearFaults(for: "/a.jpg")
            let (_, after) = try await fetch(server.url(for: "/a.jpg"))
            #expect([before, during, still, after].map(\.statusCode) == [200, 500, 500, 200])
        }
    }

    @Test("Global faults apply to every route without its own; a route's faults replace them")
    func globalFaults() async throws {
        try await withOrigin { server in
            server.setAsset(Self.asset, at: "/a.jpg")
            server.setAsset(Self.asset, at: "/b.jpg")
            server.setFaults([.status(500)], for: nil)
            server.setFaults([.noAcceptRanges], for: "/b.jpg")
            let (_, a) = try await fetch(server.url(for: "/a.jpg"))
            let (_, b) = try await fetch(server.url(for: "/b.jpg"))
            #expect(a.statusCode == 500)
            #expect(b.statusCode == 200)
            server.clearFaults(for: nil)
            let (_, cleared) = try await fetch(server.url(for: "/a.jpg"))
            #expect(cleared.statusCode == 200)
        }
    }
}

extension RawHTTPConnection {
    /// Sends a GET for `target` and reads only the response head (the body is left to the caller).
    func readResponseHead(afterSending target: String) throws -> Response {
        try sendRequest("GET", target)
        return try readResponse(bodyExpected: false)
    }
}
