import Foundation
import ImageOriginServer
import ImagePipelineKit
import Testing
import TestSupport

/// A delegate with none of the optional callbacks: what TIP calls "not implementing" the preview method.
final class FinalOnlyDelegate: FetchDelegate {}

/// Previews (a complete cached image of the same identifier under another URL, offered once) and the dirty
/// rendition delivered synchronously from the rendered cache. `/a.jpg` is the rocket (640×427); `/b.png` is a smaller,
/// different picture (451×300) under the same identifier.
@Suite("Previews: another URL's cached image offered once, stop or continue; dirty ones (scenarios 15-20)", .serialized)
struct PreviewTests {
    static let smallerImage = CoordinatorHarness.imageURL.deletingLastPathComponent().appendingPathComponent("skimage-chelsea.png")

    static func serveB(_ h: FetchHarness) throws {
        h.server.setAsset(try Data(contentsOf: smallerImage), at: "/b.png", contentType: "image/png")
    }

    @Test("Scenario 16: the delegate stops at a memory preview: failed with -2, the preview kept, no request for B; B's target then comes from the rendered cache synchronously, with A's URL",
          arguments: CoordinatorDownloader.allCases)
    func previewStop(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            try Self.serveB(h)
            _ = await h.fetch(h.request())   // I via A, no target
            let target = PixelSize(width: 100, height: 100)
            let (delegate, operation) = await h.fetch(h.request("/b.png", target: target), previewDecision: .stopLoading)
            #expect(delegate.events.contains(.preview(.memoryCache)))
            let preview = try #require(operation.previewResult)
            #expect(preview.source == .memoryCache && preview.url == h.server.url(for: "/a.jpg"))
            #expect(preview.image.dimensions.width == 100 && preview.image.dimensions.height < 100)
            #expect(operation.state == .failed && operation.error?.code == .cancelledAfterLoadingPreview)
            #expect(operation.finalResult == nil && delegate.events.last == .failure(.cancelledAfterLoadingPreview))
            #expect(operation.metrics?.info(for: .memoryCache)?.result == .hitPreview)
            #expect(h.server.requestLog.map(\.path) == ["/a.jpg"])
            let again = RecordingFetchDelegate()
            let (synchronous, eventsAtReturn) = h.onDelegateQueue { () -> (FetchOperation, [RecordingFetchDelegate.Event]) in
                let operation = h.pipeline.operation(with: h.request("/b.png", target: target), delegate: again)
                h.pipeline.fetchImage(with: operation)
                return (operation, again.events)
            }
            #expect(eventsAtReturn == [.start, .final(.memoryCache)] && synchronous.isFinished)
            let hit = try #require(synchronous.finalResult)
            #expect(hit.source == .memoryCache && hit.image.dimensions == preview.image.dimensions)
            // The rendition is A's image, kept when the preview was stopped: the hit reports the URL it came from.
            #expect(hit.url == h.server.url(for: "/a.jpg"))
            #expect(h.server.requestLog.map(\.path) == ["/a.jpg"])
        }
    }

    @Test("Scenario 17: continue loads B from the network; A stays in memory (larger) and is served for A",
          arguments: CoordinatorDownloader.allCases)
    func previewContinue(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            try Self.serveB(h)
            _ = await h.fetch(h.request())
            let (delegate, operation) = await h.fetch(h.request("/b.png", target: PixelSize(width: 100, height: 100)))
            #expect(delegate.events.filter { if case .preview = $0 { true } else { false } } == [.preview(.memoryCache)])
            #expect(operation.finalResult?.source == .network && operation.previewResult?.source == .memoryCache)
            // The preview came before any network attempt.
            let previewIndex = try #require(delegate.events.firstIndex(of: .preview(.memoryCache)))
            let networkIndex = try #require(delegate.events.firstIndex(of: .attempt(.network)))
            #expect(previewIndex < networkIndex)
            #expect(h.server.requestLog.map(\.path) == ["/a.jpg", "/b.png"])
            let (_, forA) = await h.fetch(h.request())
            #expect(forA.finalResult?.source == .memoryCache && forA.finalResult?.image.dimensions == h.imageSize)
        }
    }

    @Test("Scenario 19: a disk preview when memory has none; a delegate without the preview callback just continues",
          arguments: CoordinatorDownloader.allCases)
    func diskPreview(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            try Self.serveB(h)
            _ = await h.fetch(h.request())
            h.pipeline.clearMemoryCaches()
            let (delegate, operation) = await h.fetch(h.request("/b.png"), previewDecision: .stopLoading)
            #expect(delegate.previews.map(\.source) == [.diskCache] && operation.error?.code == .cancelledAfterLoadingPreview)

            h.pipeline.clearMemoryCaches()
            let plain = FinalOnlyDelegate()
            let quiet = h.pipeline.operation(with: h.request("/b.png"), delegate: plain)
            h.pipeline.fetchImage(with: quiet)
            #expect(try await eventually(timeout: .seconds(20)) { quiet.isFinished })
            #expect(quiet.finalResult?.source == .network)
            _ = plain
        }
    }

    @Test("Scenario 20: one preview per fetch: memory's is offered, the disk's (another URL) is not",
          arguments: CoordinatorDownloader.allCases)
    func onePreview(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let small = try Data(contentsOf: Self.smallerImage)
            let c = URL(string: "http://127.0.0.1:1/c.png")!, d = URL(string: "http://127.0.0.1:1/d.jpg")!
            #expect(h.pipeline.memoryCache.storeComplete(
                CachedImageData(data: small, url: c, dimensions: PixelSize(width: 451, height: 300)), identifier: "I"))
            #expect(h.pipeline.diskCache?.storeComplete(
                CachedImageData(data: h.image, url: d, dimensions: h.imageSize), identifier: "I") == true)
            let (delegate, operation) = await h.fetch(h.request())
            #expect(delegate.previews.count == 1 && delegate.previews.first?.url == c)
            #expect(operation.finalResult?.source == .network)
        }
    }

    @Test("Scenario 15: a dirty rendition is shown synchronously before didStart, then the fetch completes from memory",
          arguments: CoordinatorDownloader.allCases)
    func dirtyPreview(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let request = h.request(target: PixelSize(width: 64, height: 64))
            _ = await h.fetch(request)
            h.pipeline.renderedCache.markDirty(identifier: "I")
            let delegate = RecordingFetchDelegate()
            let (operation, eventsAtReturn) = h.onDelegateQueue { () -> (FetchOperation, [RecordingFetchDelegate.Event]) in
                let operation = h.pipeline.operation(with: request, delegate: delegate)
                h.pipeline.fetchImage(with: operation)
                return (operation, delegate.events)
            }
            #expect(eventsAtReturn == [.dirtyPreview])
            _ = await delegate.finished()
            #expect(try await eventually { operation.isFinished })
            #expect(delegate.events.first == .dirtyPreview && delegate.events.dropFirst().first == .start)
            #expect(operation.finalResult?.source == .memoryCache)
        }
    }
}
