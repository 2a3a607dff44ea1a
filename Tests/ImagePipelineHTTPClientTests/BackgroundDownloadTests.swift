import Foundation
import ImageOriginServer
import ImagePipelineKit
import Testing
import TestSupport

/// Background downloads (every fetch at `.veryLow`: prefetches, views that left the screen) use the link only
/// while nothing else needs it. Orders and states from the origin's log, not timings.
@Suite("Background downloads yield the link to every other download and continue where they stopped", .serialized)
struct BackgroundDownloadTests {
    @Test("A running background download is suspended when a download comes, and continues with a Range once it ended: same bytes, nothing sent twice",
          arguments: CoordinatorDownloader.allCases)
    func suspendedAndContinued(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            h.server.setAsset(h.image, at: "/fg.jpg", contentType: "image/jpeg")
            // Still mid-body when the foreground load comes.
            h.server.stallNextResponse(to: "/a.jpg")
            let background = h.load(h.request("/a.jpg"), priority: .veryLow)
            #expect(try await eventually { (background.totals.last ?? 0) > 8_000 })

            let foreground = h.load(h.request("/fg.jpg"))
            #expect(isSameBytes(await foreground.outcome().result?.data, h.image))
            #expect(isSameBytes(await background.outcome().result?.data, h.image))

            let first = try #require(h.server.requests(to: "/a.jpg").first)
            let continued = try #require(h.server.requests(to: "/a.jpg").dropFirst().first)
            let foregroundRecord = try #require(h.server.requests(to: "/fg.jpg").first)
            #expect(h.server.requests(to: "/a.jpg").count == 2)
            // The background transfer stopped for the foreground one, and came back only once it had ended.
            #expect(first.clientWentAway && first.bytesSent < h.image.count)
            #expect(continued.range.map { $0.hasPrefix("bytes=") } == true && continued.status == 206)
            #expect(foregroundRecord.completedAt.map { $0 <= continued.receivedAt } == true)
            // Its fetch heard one response and saw every byte once, in order.
            #expect(background.responses.count == 1)
            #expect(background.totals == background.totals.sorted() && background.totals.last == h.image.count)
        }
    }

    @Test("A background download waits for a slot while another runs; with yielding off it starts at once, as in TIP",
          arguments: CoordinatorDownloader.allCases)
    func waitsWhileOthersRun(kind: CoordinatorDownloader) async throws {
        let recording = PriorityRecordingDownloader.Log()
        let wrap = { (base: any ImageDownloader) -> any ImageDownloader in PriorityRecordingDownloader(base: base, log: recording) }
        try await CoordinatorHarness.run(kind, wrap: wrap) { (h: CoordinatorHarness) async throws in
            h.server.setAsset(h.image, at: "/bg.jpg", contentType: "image/jpeg")
            h.server.setShaping(OriginShaping(bytesPerSecond: 40_000), for: "/a.jpg")
            // Paths of their own for the second round: a repeat of /a.jpg may be revalidated by the client's own
            // cache and answered at once with a 304.
            h.server.setAsset(h.image, at: "/a2.jpg", contentType: "image/jpeg")
            h.server.setAsset(h.image, at: "/bg2.jpg", contentType: "image/jpeg")
            // The second round's foreground download still runs when the checks below look.
            h.server.stallNextResponse(to: "/a2.jpg")
            let foreground = h.load(h.request("/a.jpg"))
            #expect(try await eventually { h.server.requests(to: "/a.jpg").count == 1 })
            let background = h.load(h.request("/bg.jpg"), priority: .veryLow)
            #expect(isSameBytes(await foreground.outcome().result?.data, h.image))
            #expect(isSameBytes(await background.outcome().result?.data, h.image))
            let foregroundEnd = try #require(h.server.requests(to: "/a.jpg").first?.completedAt)
            let backgroundStart = try #require(h.server.requests(to: "/bg.jpg").first?.receivedAt)
            #expect(foregroundEnd <= backgroundStart)

            h.coordinator.yieldsBackgroundDownloads = false
            let second = h.load(h.request("/a2.jpg"))
            #expect(try await eventually { h.server.requests(to: "/a2.jpg").count == 1 })
            let early = h.load(h.request("/bg2.jpg"), priority: .veryLow)
            // Handed to the downloader while the foreground download still runs (stalled): the coordinator no
            // longer holds it back. (When the client then sends it is the client's affair.)
            #expect(try await eventually { recording.started.withLock { $0 }.count == 4 })
            #expect(second.state.withLock { $0.outcome == nil })
            second.attachment?.cancel()
            #expect(await second.outcome().isCancelled)
            #expect(isSameBytes(await early.outcome().result?.data, h.image))
        }
    }

    @Test("A view's fetch that joins a background download makes it foreground: it is not suspended",
          arguments: CoordinatorDownloader.allCases)
    func joinedByForeground(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            h.server.setAsset(h.image, at: "/other.jpg", contentType: "image/jpeg")
            h.server.setShaping(OriginShaping(bytesPerSecond: 40_000), for: "/a.jpg")
            let prefetch = h.load(h.request("/a.jpg"), priority: .veryLow)
            #expect(try await eventually { (prefetch.totals.last ?? 0) > 4_000 })
            let view = h.load(h.request("/a.jpg"))
            let other = h.load(h.request("/other.jpg"))
            for load in [prefetch, view, other] { #expect(await load.outcome().result != nil) }
            #expect(h.server.requests(to: "/a.jpg").count == 1)
        }
    }
}
