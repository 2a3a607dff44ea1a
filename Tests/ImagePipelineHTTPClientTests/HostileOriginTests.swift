import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import Testing
import TestSupport

/// Servers that lie, change files under a resume, cut bodies without saying so, never end a body, or
/// drip-feed it: the real loopback origin misbehaving on purpose, the real pipeline and downloaders fetching.
@Suite("A hostile or broken origin: nothing wrong is cached, nothing grows without bound", .serialized, .timeLimit(.minutes(3)))
struct HostileOriginTests {
    /// `jpeg` made exactly `length` bytes long by comment segments right after its start marker: the same
    /// picture, decodable, with the length of another file.
    static func paddedJPEG(_ jpeg: Data, to length: Int) -> Data {
        var padding = Data()
        var missing = length - jpeg.count
        precondition(missing >= 0 && missing != 1 && missing != 2 && missing != 3)
        while missing > 0 {
            // A segment is FF FE, a two-byte length counting itself, then the comment; at least 4 bytes.
            var segment = min(missing, 65_537)
            if (1...3).contains(missing - segment) { segment -= 4 }
            let declared = segment - 2
            padding.append(contentsOf: [0xFF, 0xFE, UInt8(declared >> 8), UInt8(declared & 0xFF)])
            padding.append(Data(repeating: 0x20, count: segment - 4))
            missing -= segment
        }
        return jpeg.prefix(2) + padding + jpeg.dropFirst(2)
    }

    @Test("A resume answered with a range of a file that changed since is dropped; the whole new file is fetched, never spliced",
          arguments: CoordinatorDownloader.allCases)
    func resumeOfChangedFile(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            _ = try await h.cancelHalfway()
            let kept = try #require(h.pipeline.memoryCache.entry(for: "I")?.partial)
            // Another picture of exactly the same length, with its own ETag, from a server that ignores
            // If-Range: the 206 starts where the partial stops and declares the same total.
            let changed = Self.paddedJPEG(Fixtures.image("skimage-astronaut-progressive.jpg"), to: h.image.count)
            h.server.setAsset(changed, at: "/a.jpg", contentType: "image/jpeg")
            h.server.setFaults([.ignoreIfRange], for: "/a.jpg")
            h.server.setShaping(nil, for: "/a.jpg")
            h.server.clearLog()

            let (fetched, operation) = await h.fetch(h.request())
            #expect(fetched.events.last == .final(.network) || fetched.events.last == .final(.networkResumed))
            let size = try CodecCatalogue.shared.decode(changed).properties.dimensions
            #expect(operation.finalResult?.originalDimensions == size)
            let (stored, difference) = sameBytes(h.pipeline.diskCache?.entry(for: "I")?.complete?.data, changed)
            #expect(stored, "\(difference)")
            // The resume was sent, refused on its validators, and followed by a request for the whole file.
            let requests = h.server.requests(to: "/a.jpg")
            #expect(requests.map(\.range) == ["bytes=\(kept.data.count)-", nil], "\(requests.map { ($0.status, $0.range, $0.bytesSent) })")
        }
    }

    @Test("A body with no length cut short by a close is a failed fetch, not a cached image; a whole one is cached",
          arguments: CoordinatorDownloader.allCases)
    func closeDelimitedTruncation(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            h.server.setFaults([.closeDelimitedBody, .closeAfterBytes(h.image.count / 2)], for: "/a.jpg")
            let (cut, operation) = await h.fetch(h.request())
            #expect(cut.events.last == .failure(.httpTransactionError))
            if case .failure(let error) = await cut.finished() {
                let truncated = if case .truncatedImage? = error.underlying as? ImageDownloadError { true } else { false }
                #expect(truncated, "\(error)")
            }
            #expect(operation.receivedByteCount == h.image.count / 2)
            #expect(h.pipeline.diskCache?.entry(for: "I")?.complete == nil)
            #expect(h.pipeline.memoryCache.entry(for: "I")?.complete == nil)

            h.server.setFaults([.closeDelimitedBody], for: "/a.jpg")
            let (whole, _) = await h.fetch(h.request())
            #expect(whole.events.last == .final(.network))
            let (stored, difference) = sameBytes(h.pipeline.diskCache?.entry(for: "I")?.complete?.data, h.image)
            #expect(stored, "\(difference)")
        }
    }

    @Test("An endless body fails the fetch once it passes the response-size limit; a Content-Length over it is refused unread",
          arguments: CoordinatorDownloader.allCases)
    func endlessBody(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let limit = 2 << 20
            h.configuration.downloadLimits.maxResponseBytes = limit
            // At the harness's 2 MB/s: URLSession cannot hold libcurl back, and an unshaped endless body on
            // loopback would pile up gigabytes in its delegate queue before the limit's cancel takes effect.
            h.server.setShaping(OriginShaping(bytesPerSecond: 2_000_000), for: "/a.jpg")
            h.server.setFaults([.endlessBody], for: "/a.jpg")
            let (endless, operation) = await h.fetch(h.request())
            #expect(endless.events.last == .failure(.httpTransactionError))
            if case .failure(let error) = await endless.finished() {
                #expect(error.underlying as? DownloadError == .responseTooLarge(limit: limit))
            }
            #expect(operation.receivedByteCount <= limit)
            #expect(try await eventually { h.server.requests(to: "/a.jpg").first?.isComplete == true })
            #expect(h.server.requests(to: "/a.jpg").first?.clientWentAway == true)

            h.server.clearLog()
            h.server.setFaults([.wrongContentLength(Int(Int32.max))], for: "/a.jpg")
            let (declared, declaredOperation) = await h.fetch(h.request())
            if case .failure(let error) = await declared.finished() {
                #expect(error.underlying as? DownloadError == .responseTooLarge(limit: limit))
            } else {
                Issue.record("a 2 GiB Content-Length was accepted")
            }
            #expect(declaredOperation.receivedByteCount == 0)
        }
    }

    @Test("A drip-fed body fails on the minimum transfer rate, a slow one on the total deadline",
          arguments: CoordinatorDownloader.allCases)
    func slowBodies(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            h.server.setShaping(OriginShaping(bytesPerSecond: 2_000), for: "/a.jpg")
            h.configuration.downloadLimits.minimumTransferRate = MinimumTransferRate(bytesPerSecond: 10_000, window: .milliseconds(500))
            let (dripped, _) = await h.fetch(h.request())
            if case .failure(let error) = await dripped.finished() {
                #expect(error.underlying as? DownloadError == .transferTooSlow)
            } else {
                Issue.record("a 2 kB/s body passed a 10 kB/s minimum")
            }

            h.configuration.downloadLimits.minimumTransferRate = nil
            h.configuration.downloadLimits.totalTimeout = .milliseconds(700)
            h.server.setShaping(OriginShaping(bytesPerSecond: 20_000), for: "/a.jpg")
            let (slow, _) = await h.fetch(h.request())
            if case .failure(let error) = await slow.finished() {
                #expect(error.underlying as? DownloadError == .deadlineExceeded)
            } else {
                Issue.record("a 5.6 s download finished within a 0.7 s deadline")
            }
        }
    }

    @Test("A refused connection fails at once with its own code", arguments: CoordinatorDownloader.allCases)
    func refusedConnection(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            // A port that was just listening and is closed now: connects to it are refused.
            let closed = try await ImageOriginServer.start(port: 0)
            let url = closed.url(for: "/a.jpg")
            try await closed.shutdown()
            let (refused, _) = await h.fetch(GenericFetchRequest(url: url, identifier: "R"))
            if case .failure(let error) = await refused.finished() {
                #expect(error.underlying as? DownloadError == .connectionRefused)
            } else {
                Issue.record("a fetch from a closed port succeeded")
            }
        }
    }
}
