import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import Testing
import TestSupport

/// The prefetcher against the loopback origin: what it downloads, at what priority, how many at once, and
/// what stopping does.
@Suite("ImagePrefetcher: low priority, raised by a view's fetch, cancelled when the window moves, bounded", .serialized)
struct ImagePrefetcherTests {
    /// `count` copies of the harness's JPEG at `/p0.jpg`, `/p1.jpg`…, each sent at `bytesPerSecond`.
    private static func serveCopies(_ h: FetchHarness, count: Int, bytesPerSecond: Int) -> [GenericFetchRequest] {
        (0..<count).map { index in
            let path = "/p\(index).jpg"
            h.server.setAsset(h.image, at: path, contentType: "image/jpeg")
            h.server.setShaping(OriginShaping(bytesPerSecond: bytesPerSecond), for: path)
            return h.request(path, identifier: nil, target: PixelSize(width: 96, height: 96), mode: .fill)
        }
    }

    @Test("A prefetch downloads at very low priority; a view's fetch of the same image joins that download and raises it")
    func raisedByVisibleFetch() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            let log = PriorityRecordingDownloader.Log()
            let base = HTTPClientDownloader()
            h.configuration.imageDownloader = PriorityRecordingDownloader(base: base, log: log)
            // Slow enough (about 4 s for the image) that the view's fetch comes while the prefetch still
            // downloads, even on a machine busy with other tests (at 1.5 s, a full test run once finished the
            // prefetch first).
            let request = Self.serveCopies(h, count: 1, bytesPerSecond: 30_000)[0]
            let prefetcher = ImagePrefetcher(pipeline: h.pipeline)

            prefetcher.startPrefetching(with: [request])
            #expect(prefetcher.isPrefetching(request))
            #expect(try await eventually { h.server.requests(to: "/p0.jpg").count == 1 })
            #expect(log.started.withLock { $0 } == [.veryLow])

            // The cell comes on screen and asks for the same image at its own (normal) priority.
            let (visible, _) = await h.fetch(request)
            #expect(visible.events.last == .final(.network))
            #expect(log.changes.withLock { $0 }.contains(.normal), "\(log.changes.withLock { $0 })")
            #expect(h.server.requests(to: "/p0.jpg").count == 1)
            #expect(try await eventually { prefetcher.completedCount == 1 && !prefetcher.isPrefetching(request) })
            try await base.shutdown()
        }
    }

    @Test("Stopping the prefetches the window left cancels the running one; a waiting one is never requested")
    func stopCancels() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            let requests = Self.serveCopies(h, count: 2, bytesPerSecond: 40_000)
            h.server.stallNextResponse(to: "/p0.jpg")   // the stop lands mid-body
            let prefetcher = ImagePrefetcher(pipeline: h.pipeline, maxConcurrentPrefetches: 1)
            prefetcher.startPrefetching(with: requests)
            #expect(try await eventually { (h.server.requests(to: "/p0.jpg").first?.bytesSent ?? 0) > 0 })
            #expect(prefetcher.runningCount == 1 && prefetcher.waitingCount == 1)

            prefetcher.stopPrefetching(with: requests)
            #expect(prefetcher.runningCount == 0 && prefetcher.waitingCount == 0)
            #expect(try await eventually { h.server.requests(to: "/p0.jpg").first?.isComplete == true })
            #expect(h.server.requests(to: "/p0.jpg").first?.clientWentAway == true)
            try await Task.sleep(for: .milliseconds(300))
            #expect(h.server.requests(to: "/p1.jpg").isEmpty)
            #expect(prefetcher.completedCount == 0)
            #expect(h.pipeline.diskCache?.entry(for: requests[0].resolvedIdentifier)?.complete == nil)
        }
    }

    @Test("However many are asked for, no more than the limit run at once, and every one ends in the caches")
    func boundedConcurrency() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            let requests = Self.serveCopies(h, count: 6, bytesPerSecond: 1_000_000)
            let prefetcher = ImagePrefetcher(pipeline: h.pipeline, maxConcurrentPrefetches: 2)
            prefetcher.startPrefetching(with: requests + requests)   // asked twice: still one prefetch each
            var mostRunning = 0, mostRequestsInFlight = 0
            let deadline = ContinuousClock.now + .seconds(20)
            while prefetcher.completedCount < requests.count, ContinuousClock.now < deadline {
                mostRunning = max(mostRunning, prefetcher.runningCount)
                let inFlight = h.server.requestLog.filter { !$0.isComplete }.count
                mostRequestsInFlight = max(mostRequestsInFlight, inFlight)
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(prefetcher.completedCount == requests.count)
            #expect(mostRunning == 2)
            #expect(mostRequestsInFlight <= 2)
            #expect(h.server.requestLog.count == requests.count)
            // The disk write follows the delivery; it does not delay it.
            #expect(try await eventually {
                requests.allSatisfy { h.pipeline.diskCache?.entry(for: $0.resolvedIdentifier)?.complete != nil }
            })
        }
    }
}
