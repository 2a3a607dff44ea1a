import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ImageOriginServer
import Synchronization
import Testing
import TestSupport
import PipelineLocking

@Suite("Origin server: the request log")
struct OriginRequestLogTests {
    @Test("Each request is logged with method, path, query, every header, Range, If-Range, Authorization, status and bytes")
    func recordsRequests() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(2000), at: "/a.jpg")
            let connection = try RawHTTPConnection(port: server.port)
            _ = try await offloaded {
                try connection.request("GET", "/a.jpg?size=small&v=2", headers: [
                    ("Range", "bytes=100-"), ("If-Range", "\"abc\""), ("Authorization", "Bearer token-1"),
                    ("X-Test", "one"), ("X-Test", "two"),
                ])
            }
            _ = try await offloaded { try connection.request("HEAD", "/missing") }
            try await server.waitForCompletedRequests(count: 2, timeout: .seconds(5))
            let log = server.requestLog
            try #require(log.count == 2)
            let first = log[0]
            #expect(first.method == "GET")
            #expect(first.path == "/a.jpg")
            #expect(first.query == "size=small&v=2")
            #expect(first.target == "/a.jpg?size=small&v=2")
            #expect(first.range == "bytes=100-")
            #expect(first.ifRange == "\"abc\"")
            #expect(first.authorization == "Bearer token-1")
            #expect(first.headers.filter { $0.name == "X-Test" }.map(\.value) == ["one", "two"])
            #expect(first.headers.contains { $0.name == "Host" && $0.value == "127.0.0.1" })
            #expect(first.status == 200)  // a stale If-Range: the whole body
            #expect(first.bytesSent == 2000)
            #expect(first.isComplete && !first.clientWentAway)
            #expect(log[1].method == "HEAD" && log[1].status == 404 && log[1].query == nil && log[1].range == nil)
            #expect(log[1].sequence == first.sequence + 1)
            #expect(server.requests(to: "/a.jpg").map(\.sequence) == [first.sequence])
        }
    }

    @Test("A client that goes away mid-body is logged as clientWentAway with the bytes sent so far")
    func clientWentAway() async throws {
        try await withOrigin { server in
            // Twenty seconds of body: the client closes after 10 KB, well within it even when its thread waits
            // behind the other tests' work (with two seconds, the whole body was sometimes sent first).
            let size = 2_000_000
            server.setAsset(patternBytes(size), at: "/slow.jpg")
            server.setShaping(OriginShaping(bytesPerSecond: 100_000), for: "/slow.jpg")
            let connection = try RawHTTPConnection(port: server.port)
            let received = try await offloaded { () -> Int in
                try connection.sendRequest("GET", "/slow.jpg")
                var total = 0
                while total < 10_000 {
                    let (bytes, ending) = connection.readSome()
                    if ending != nil { break }
                    total += bytes.count
                }
                connection.close()
                return total
            }
            #expect(received >= 10_000)
            try await server.waitForCompletedRequests(count: 1, timeout: .seconds(5))
            let record = try #require(server.requestLog.first)
            #expect(record.clientWentAway)
            #expect(record.bytesSent > 0 && record.bytesSent < size)
        }
    }

    @Test("A URLSession task cancelled mid-body is logged as clientWentAway")
    func urlSessionCancel() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(300_000), at: "/slow.jpg")
            server.setShaping(OriginShaping(bytesPerSecond: 100_000), for: "/slow.jpg")
            let task = Task { try await fetch(server.url(for: "/slow.jpg")) }
            // Wait until the body has started, without sleeping blindly.
            let deadline = ContinuousClock.now + .seconds(5)
            while (server.requestLog.first?.bytesSent ?? 0) < 5_000, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            task.cancel()
            _ = try? await task.value
            try await server.waitForCompletedRequests(count: 1, timeout: .seconds(5))
            let record = try #require(server.requestLog.first)
            #expect(record.clientWentAway)
            #expect(record.bytesSent < 300_000)
        }
    }

    @Test("A completed response is not logged as the client going away, even when the client closes right after")
    func completedNotWentAway() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(3000), at: "/a.jpg")
            let connection = try RawHTTPConnection(port: server.port)
            _ = try await offloaded { try connection.request("GET", "/a.jpg") }
            connection.close()
            try await server.waitForCompletedRequests(count: 1, timeout: .seconds(5))
            #expect(server.requestLog.first?.clientWentAway == false)
        }
    }

    @Test("waitForCompletedRequests times out with the count reached so far")
    func waitTimesOut() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(10), at: "/a.jpg")
            _ = try await fetch(server.url(for: "/a.jpg"))
            await #expect(throws: OriginServerError.timedOut(expected: 2, completed: 1)) {
                try await server.waitForCompletedRequests(count: 2, timeout: .milliseconds(300))
            }
        }
    }

    @Test("waitForCompletedRequests returns as soon as requests completing later reach the count")
    func waitResumes() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(10), at: "/a.jpg")
            server.setShaping(OriginShaping(firstByteLatency: .milliseconds(200)), for: "/a.jpg")
            async let waited: Void = server.waitForCompletedRequests(count: 3, timeout: .seconds(10))
            for _ in 0..<3 { _ = try await fetch(server.url(for: "/a.jpg")) }
            try await waited
            #expect(server.requestLog.filter(\.isComplete).count == 3)
        }
    }

    @Test("clearLog empties the log and restarts the completed count; sequence numbers keep increasing")
    func clearLog() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(10), at: "/a.jpg")
            _ = try await fetch(server.url(for: "/a.jpg"))
            try await server.waitForCompletedRequests(count: 1, timeout: .seconds(5))
            let firstSequence = try #require(server.requestLog.first?.sequence)
            server.clearLog()
            #expect(server.requestLog.isEmpty)
            await #expect(throws: OriginServerError.self) {
                try await server.waitForCompletedRequests(count: 1, timeout: .milliseconds(100))
            }
            _ = try await fetch(server.url(for: "/a.jpg"))
            try await server.waitForCompletedRequests(count: 1, timeout: .seconds(5))
            #expect(server.requestLog.map(\.sequence) == [firstSequence + 1])
        }
    }

    @Test("The request observer sees every completed record; the log capacity keeps the newest")
    func observerAndCapacity() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(10), at: "/a.jpg")
            let seen = Locked<[Int]>([])
            server.setRequestObserver { record in seen.withLock { $0.append(record.sequence) } }
            server.setRequestLogCapacity(2)
            for _ in 0..<4 { _ = try await fetch(server.url(for: "/a.jpg")) }
            try await server.waitForCompletedRequests(count: 4, timeout: .seconds(5))
            #expect(seen.withLock { $0 }.count == 4)
            #expect(server.requestLog.map(\.sequence) == Array(seen.withLock { $0 }.sorted().suffix(2)))
        }
    }

    @Test("Waiting fails with shutDown when the server stops first")
    func waitFailsOnShutdown() async throws {
        let server = try await ImageOriginServer.start(port: 0)
        let waiter = Task { try await server.waitForCompletedRequests(count: 1, timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(50))
        try await server.shutdown()
        await #expect(throws: OriginServerError.shutDown) { try await waiter.value }
    }
}
