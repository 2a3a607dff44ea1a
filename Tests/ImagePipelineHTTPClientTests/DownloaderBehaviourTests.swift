import AsyncHTTPClient
import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import Testing
import TestSupport

/// The rules every ``ImageDownloader`` obeys, run against both downloaders and a real loopback origin.
@Suite("Downloaders against the loopback origin", .serialized, .timeLimit(.minutes(2)))
struct DownloaderBehaviourTests {
    @Test("A full download delivers the asset's exact bytes and its validators", arguments: DownloaderKind.allCases)
    func fullBody(kind: DownloaderKind) async throws {
        try await DownloadHarness.run(kind) { harness in
            harness.server.setAsset(Fixtures.rocketJPEG, at: "/rocket.jpg", contentType: "image/jpeg")
            let record = try await harness.download(harness.request("/rocket.jpg"))
            #expect(record.error == nil)
            #expect(record.violations.isEmpty, "\(record.violations)")
            let response = try #require(record.response)
            #expect(response.statusCode == 200)
            #expect(response.url == harness.server.url(for: "/rocket.jpg"))
            #expect(response.expectedContentLength == Fixtures.rocketJPEG.count)
            #expect(response.headers["content-length"] == String(Fixtures.rocketJPEG.count))
            #expect(response.headers["Last-Modified"] == "Mon, 01 Jan 2024 00:00:00 GMT")
            #expect(response.headers["ETAG"] == harness.server.etag(at: "/rocket.jpg"))
            #expect(response.headers["Accept-Ranges"] == "bytes")
            #expect(response.headers["Content-Type"] == "image/jpeg")
            #expect(record.body == Fixtures.rocketJPEG)
        }
    }

    @Test("Range, If-Range, Authorization and custom headers reach the server; a Range gets a 206 slice",
          arguments: DownloaderKind.allCases)
    func requestHeadersAndRange(kind: DownloaderKind) async throws {
        try await DownloadHarness.run(kind) { harness in
            let asset = Fixtures.rocketJPEG
            harness.server.setAsset(asset, at: "/rocket.jpg")
            let etag = try #require(harness.server.etag(at: "/rocket.jpg"))
            var request = harness.request("/rocket.jpg")
            request.headers = ["Range": "bytes=1000-", "If-Range": etag, "Authorization": "Bearer t0k3n", "X-Foo": "bar"]
            let record = try await harness.download(request)
            #expect(record.error == nil)
            let response = try #require(record.response)
            #expect(response.statusCode == 206)
            #expect(response.headers["Content-Range"] == "bytes 1000-\(asset.count - 1)/\(asset.count)")
            #expect(response.expectedContentLength == asset.count - 1000)
            #expect(record.body == asset.dropFirst(1000))

            try await harness.server.waitForCompletedRequests(count: 1, timeout: .seconds(5))
            let logged = try #require(harness.server.requestLog.first)
            #expect(logged.method == "GET")
            #expect(logged.range == "bytes=1000-")
            #expect(logged.ifRange == etag)
            #expect(logged.authorization == "Bearer t0k3n")
            #expect(logged.header("X-Foo") == "bar")
            // Neither asks for a compressed body: Content-Length and Range must count the bytes delivered.
            #expect(logged.header("Accept-Encoding") == (kind == .urlSession ? "identity" : nil))
        }
    }

    @Test("Time the delegate spends in a callback is not idleness", arguments: DownloaderKind.allCases)
    func slowDelegateIsNotIdle(kind: DownloaderKind) async throws {
        try await DownloadHarness.run(kind) { harness in
            harness.server.setAsset(Fixtures.hubbleJPEG, at: "/hubble.jpg")
            // Two seconds of idle timeout against a five-second pause: wide enough that a loaded machine's slow
            // event loop after the pause is not mistaken for the server's silence.
            let record = try await harness.download(harness.request("/hubble.jpg", limits: DownloadLimits(idleTimeout: .seconds(2))),
                                                    firstChunkPause: .seconds(5))
            #expect(record.error == nil, "after \(record.body.count) bytes")
            #expect(isSameBytes(record.body, Fixtures.hubbleJPEG))
            #expect(record.violations.isEmpty, "\(record.violations)")
        }
    }

    @Test("A 404 is delivered as a response with its body, not as an error", arguments: DownloaderKind.allCases)
    func notFoundIsAResponse(kind: DownloaderKind) async throws {
        try await DownloadHarness.run(kind) { harness in
            let record = try await harness.download(harness.request("/missing.jpg"))
            #expect(record.error == nil)
            #expect(record.response?.statusCode == 404)
            #expect(record.body.count == record.response?.expectedContentLength ?? -1)
        }
    }

    @Test("A status fault (503) is delivered as a response", arguments: DownloaderKind.allCases)
    func serverErrorIsAResponse(kind: DownloaderKind) async throws {
        try await DownloadHarness.run(kind) { harness in
            harness.server.setAsset(Fixtures.rocketJPEG, at: "/rocket.jpg")
            harness.server.setFaults([.status(503)], for: "/rocket.jpg")
            let record = try await harness.download(harness.request("/rocket.jpg"))
            #expect(record.error == nil)
            #expect(record.response?.statusCode == 503)
        }
    }

    @Test("Redirects are followed; the response names the final URL", arguments: DownloaderKind.allCases)
    func redirectsFollowed(kind: DownloaderKind) async throws {
        try await DownloadHarness.run(kind) { harness in
            let server = harness.server
            server.setAsset(Fixtures.rocketJPEG, at: "/rocket.jpg")
            server.setFaults([.redirect(to: "/hop2", status: 301)], for: "/hop1")
            server.setFaults([.redirect(to: server.url(for: "/rocket.jpg").absoluteString, status: 307)], for: "/hop2")
            var request = harness.request("/hop1")
            request.headers = ["X-Foo": "kept"]
            let record = try await harness.download(request)
            #expect(record.error == nil)
            #expect(record.response?.statusCode == 200)
            #expect(record.response?.url == server.url(for: "/rocket.jpg"))
            #expect(record.body == Fixtures.rocketJPEG)
            try await server.waitForCompletedRequests(count: 3, timeout: .seconds(5))
            let log = server.requestLog.sorted { $0.sequence < $1.sequence }
            #expect(log.map(\.path) == ["/hop1", "/hop2", "/rocket.jpg"])
            #expect(log.allSatisfy { $0.header("X-Foo") == "kept" })
        }
    }

    @Test("One redirect more than maxRedirects fails with tooManyRedirects and delivers no response",
          arguments: DownloaderKind.allCases)
    func tooManyRedirects(kind: DownloaderKind) async throws {
        try await DownloadHarness.run(kind) { harness in
            let server = harness.server
            server.setAsset(Fixtures.rocketJPEG, at: "/rocket.jpg")
            server.setFaults([.redirect(to: "/r2")], for: "/r1")
            server.setFaults([.redirect(to: "/r3")], for: "/r2")
            server.setFaults([.redirect(to: "/rocket.jpg")], for: "/r3")
            let record = try await harness.download(harness.request("/r1", limits: DownloadLimits(maxRedirects: 2)))
            #expect(record.error == .tooManyRedirects(2))
            #expect(record.response == nil)
            #expect(record.body.isEmpty)
            // Exactly at the limit is fine.
            let allowed = try await harness.download(harness.request("/r1", limits: DownloadLimits(maxRedirects: 3)))
            #expect(allowed.error == nil)
            #expect(allowed.body == Fixtures.rocketJPEG)
        }
    }

    @Test("A redirect to another origin does not forward Authorization", arguments: DownloaderKind.allCases)
    func crossOriginRedirectDropsCredentials(kind: DownloaderKind) async throws {
        try await DownloadHarness.run(kind) { harness in
            let other = try await ImageOriginServer.start(port: 0)
            other.setAsset(Fixtures.rocketJPEG, at: "/rocket.jpg")
            harness.server.setFaults([.redirect(to: other.url(for: "/rocket.jpg").absoluteString)], for: "/away")
            var request = harness.request("/away")
            request.headers = ["Authorization": "Bearer secret", "X-Foo": "bar"]
            let record = try await harness.download(request)
            #expect(record.error == nil)
            #expect(record.body == Fixtures.rocketJPEG)
            try await other.waitForCompletedRequests(count: 1, timeout: .seconds(5))
            #expect(harness.server.requestLog.first?.authorization == "Bearer secret")
            #expect(other.requestLog.first?.authorization == nil)
            #expect(other.requestLog.first?.header("X-Foo") == "bar")
            try await other.shutdown()
        }
    }

    @Test("A declared Content-Length over maxResponseBytes fails before any event", arguments: DownloaderKind.allCases)
    func declaredTooLarge(kind: DownloaderKind) async throws {
        try await DownloadHarness.run(kind) { harness in
            harness.server.setAsset(Fixtures.rocketJPEG, at: "/rocket.jpg")
            let limit = Fixtures.rocketJPEG.count - 1
            let record = try await harness.download(harness.request("/rocket.jpg", limits: DownloadLimits(maxResponseBytes: limit)))
            #expect(record.error == .responseTooLarge(limit: limit))
            #expect(record.response == nil)
            #expect(record.body.isEmpty)
            // Exactly the limit passes.
            let exact = try await harness.download(
                harness.request("/rocket.jpg", limits: DownloadLimits(maxResponseBytes: Fixtures.rocketJPEG.count)))
            #expect(exact.error == nil)
            #expect(exact.body == Fixtures.rocketJPEG)
        }
    }

    @Test("A body without Content-Length is cut off at maxResponseBytes while streaming", arguments: DownloaderKind.allCases)
    func undeclaredTooLarge(kind: DownloaderKind) async throws {
        let responder = try UndeclaredLengthResponder(body: Fixtures.hubbleJPEG)
        let downloader = kind.makeDownloader()
        let limit = 64 * 1024
        let delegate = RecordingDelegate()
        _ = downloader.startDownload(DownloadRequest(url: responder.url, limits: DownloadLimits(maxResponseBytes: limit)),
                                     delegate: delegate)
        let record = try await delegate.waitForCompletion(timeout: .seconds(20))
        #expect(record.error == .responseTooLarge(limit: limit))
        #expect(record.response?.expectedContentLength == nil)
        #expect(record.body.count <= limit)
        #expect(record.body == Fixtures.hubbleJPEG.prefix(record.body.count))
        #expect(record.violations.isEmpty, "\(record.violations)")

        // Without a limit the close-delimited body arrives whole.
        let whole = RecordingDelegate()
        _ = downloader.startDownload(DownloadRequest(url: responder.url), delegate: whole)
        let wholeRecord = try await whole.waitForCompletion(timeout: .seconds(20))
        #expect(wholeRecord.error == nil)
        #expect(wholeRecord.body == Fixtures.hubbleJPEG)
        try await (downloader as? HTTPClientDownloader)?.shutdown()
    }

    @Test("A chunked body (no Content-Length) is cut off at maxResponseBytes while streaming", arguments: DownloaderKind.allCases)
    func chunkedTooLarge(kind: DownloaderKind) async throws {
        try await DownloadHarness.run(kind) { harness in
            harness.server.setAsset(Fixtures.hubbleJPEG, at: "/hubble.jpg")
            harness.server.setFaults([.chunkedTransfer], for: "/hubble.jpg")
            let limit = 100_000
            let record = try await harness.download(harness.request("/hubble.jpg", limits: DownloadLimits(maxResponseBytes: limit)))
            #expect(record.error == .responseTooLarge(limit: limit))
            #expect(record.response?.expectedContentLength == nil)
            #expect(record.body.count <= limit)
            #expect(record.body == Fixtures.hubbleJPEG.prefix(record.body.count))
            #expect(record.violations.isEmpty, "\(record.violations)")

            let whole = try await harness.download(harness.request("/hubble.jpg"))
            #expect(whole.error == nil)
            #expect(whole.body == Fixtures.hubbleJPEG)
        }
    }

    @Test("File URLs are refused unless allowed, then streamed as a 200 with Content-Length", arguments: DownloaderKind.allCases)
    func fileURLs(kind: DownloaderKind) async throws {
        let downloader = kind.makeDownloader()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-downloader-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("rocket.jpg")
        try Fixtures.hubbleJPEG.write(to: file)

        let refused = RecordingDelegate()
        _ = downloader.startDownload(DownloadRequest(url: file), delegate: refused)
        let refusedRecord = try await refused.waitForCompletion(timeout: .seconds(5))
        #expect(refusedRecord.error == .unsupportedScheme("file"))
        #expect(refusedRecord.response == nil)

        let allowed = RecordingDelegate()
        _ = downloader.startDownload(DownloadRequest(url: file, limits: DownloadLimits(allowsFileURLs: true)), delegate: allowed)
        let record = try await allowed.waitForCompletion(timeout: .seconds(5))
        #expect(record.error == nil)
        #expect(record.response?.statusCode == 200)
        #expect(record.response?.expectedContentLength == Fixtures.hubbleJPEG.count)
        #expect(record.response?.headers["Content-Length"] == String(Fixtures.hubbleJPEG.count))
        #expect(record.chunkCount > 1)
        #expect(record.body == Fixtures.hubbleJPEG)
        #expect(record.violations.isEmpty, "\(record.violations)")

        let missing = RecordingDelegate()
        _ = downloader.startDownload(DownloadRequest(url: directory.appendingPathComponent("none.jpg"),
                                                     limits: DownloadLimits(allowsFileURLs: true)), delegate: missing)
        let missingRecord = try await missing.waitForCompletion(timeout: .seconds(5))
        #expect(missingRecord.error == nil)
        #expect(missingRecord.response?.statusCode == 404)

        let tooLarge = RecordingDelegate()
        _ = downloader.startDownload(DownloadRequest(url: file, limits: DownloadLimits(maxResponseBytes: 1000, allowsFileURLs: true)),
                                     delegate: tooLarge)
        #expect(try await tooLarge.waitForCompletion(timeout: .seconds(5)).error == .responseTooLarge(limit: 1000))
        try await (downloader as? HTTPClientDownloader)?.shutdown()
    }

    @Test("Schemes other than http and https are refused, and so are HTTP URLs without a host", arguments: DownloaderKind.allCases)
    func otherSchemesRefused(kind: DownloaderKind) async throws {
        let downloader = kind.makeDownloader()
        for (string, scheme) in [("ftp://127.0.0.1/a.jpg", "ftp"), ("data:image/jpeg;base64,AAAA", "data"),
                                 ("gopher://example.com/1", "gopher"), ("HTTPX://example.com/a.jpg", "httpx")] {
            let delegate = RecordingDelegate()
            _ = downloader.startDownload(DownloadRequest(url: try #require(URL(string: string))), delegate: delegate)
            let record = try await delegate.waitForCompletion(timeout: .seconds(5))
            #expect(record.error == .unsupportedScheme(scheme))
            #expect(record.error?.code == .unsupportedScheme)
            #expect(record.response == nil)
        }
        for string in ["http:///a.jpg", "https:a.jpg"] {
            let delegate = RecordingDelegate()
            _ = downloader.startDownload(DownloadRequest(url: try #require(URL(string: string))), delegate: delegate)
            let record = try await delegate.waitForCompletion(timeout: .seconds(5))
            #expect(record.error?.code == .invalidURL, "\(string)")
        }
        try await (downloader as? HTTPClientDownloader)?.shutdown()
    }

    @Test("Changing priority while running breaks nothing (and moves URLSessionTask.priority)", arguments: DownloaderKind.allCases)
    func priorityChange(kind: DownloaderKind) async throws {
        try await DownloadHarness.run(kind) { harness in
            let asset = Fixtures.hubbleJPEG
            harness.server.setAsset(asset, at: "/hubble.jpg")
            harness.server.setShaping(OriginShaping(bytesPerSecond: 600_000), for: "/hubble.jpg")
            let delegate = RecordingDelegate()
            var request = harness.request("/hubble.jpg")
            request.priority = .low
            let task = harness.downloader.startDownload(request, delegate: delegate)
            let sessionTask = task as? URLSessionImageDownloadTask
            if kind == .urlSession { #expect(sessionTask?.sessionTaskPriority == 0.25) }
            #expect(task.priority == .low)
            try await Task.sleep(for: .milliseconds(100))
            task.priority = .veryHigh
            #expect(task.priority == .veryHigh)
            if kind == .urlSession { #expect(sessionTask?.sessionTaskPriority == 1.0) }
            task.priority = .high
            if kind == .urlSession { #expect(sessionTask?.sessionTaskPriority == 0.75) }
            let record = try await delegate.waitForCompletion(timeout: .seconds(20))
            #expect(record.error == nil)
            #expect(record.body == asset)
            #expect(record.violations.isEmpty, "\(record.violations)")
        }
    }

    @Test("20 concurrent downloads all complete with their own bytes", arguments: DownloaderKind.allCases)
    func concurrentDownloads(kind: DownloaderKind) async throws {
        try await DownloadHarness.run(kind) { harness in
            for index in 0..<20 {
                harness.server.setAsset(Fixtures.distinctJPEG(index), at: "/img\(index).jpg")
            }
            harness.server.setShaping(OriginShaping(bytesPerSecond: 600_000, firstByteLatency: .milliseconds(20)))
            let delegates = (0..<20).map { index in
                let delegate = RecordingDelegate()
                _ = harness.downloader.startDownload(harness.request("/img\(index).jpg"), delegate: delegate)
                return delegate
            }
            for (index, delegate) in delegates.enumerated() {
                let record = try await delegate.waitForCompletion(timeout: .seconds(30), settle: .zero)
                #expect(record.error == nil)
                #expect(record.response?.statusCode == 200)
                #expect(record.body == Fixtures.distinctJPEG(index), "download \(index)")
                #expect(record.violations.isEmpty, "\(record.violations)")
            }
            try await harness.server.waitForCompletedRequests(count: 20, timeout: .seconds(5))
            #expect(harness.server.requestLog.count == 20)
        }
    }

    @Test("An injected client that follows redirects itself still has every hop checked against the policy")
    func injectedFollowingClient() async throws {
        let server = try await ImageOriginServer.start(port: 0)
        var configuration = HTTPClientDownloader.defaultConfiguration()
        configuration.redirectConfiguration = .follow(max: 10, allowCycles: false)
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let downloader = HTTPClientDownloader(client: client)
        server.setAsset(Fixtures.rocketJPEG, at: "/rocket.jpg")
        server.setFaults([.redirect(to: "/r2")], for: "/r1")
        server.setFaults([.redirect(to: "/r3")], for: "/r2")
        server.setFaults([.redirect(to: "/rocket.jpg")], for: "/r3")

        let followed = RecordingDelegate()
        _ = downloader.startDownload(DownloadRequest(url: server.url(for: "/r1")), delegate: followed)
        let record = try await followed.waitForCompletion(timeout: .seconds(10))
        #expect(record.error == nil)
        #expect(record.response?.url == server.url(for: "/rocket.jpg"))
        #expect(record.body == Fixtures.rocketJPEG)

        server.clearLog()
        let limited = RecordingDelegate()
        _ = downloader.startDownload(DownloadRequest(url: server.url(for: "/r1"), limits: DownloadLimits(maxRedirects: 1)),
                                     delegate: limited)
        let limitedRecord = try await limited.waitForCompletion(timeout: .seconds(10))
        #expect(limitedRecord.error == .tooManyRedirects(1))
        #expect(limitedRecord.response == nil)
        // The refused hop is never requested.
        #expect(!server.requestLog.contains { $0.path == "/r3" })

        try await downloader.shutdown()  // an injected client is not the downloader's to shut down…
        try await client.shutdown()      // …so its owner does
        try await server.shutdown()
    }
}
