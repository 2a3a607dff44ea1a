import Foundation
import ImageOriginServer
import ImagePipelineKit
import MetricsTestKit
import Testing
import TestSupport

/// Rendition tables as a tier of the pipeline: renditions kept on disk, read instead of decoding.
@Suite("Rendition tables in the fetch path: mapped hits, no decode, scrolling over a warm disk cache", .serialized)
struct RenditionTableTierTests {
    static let target = PixelSize(width: 128, height: 128)

    /// The number of decodes the pipeline recorded so far.
    static func decodes(_ metrics: TestMetrics) -> Int {
        (try? metrics.expectTimer(PipelineMetricLabels.decodeDuration, [("format", "\(ImageType.jpeg)")]).values.count) ?? 0
    }

    @Test("A disk hit at a target shown before is the kept rendition: no file read, no decode, the same pixels, in the next launch too")
    func diskHitWithoutDecode() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            let metrics = TestMetrics()
            h.configuration.metricsFactory = metrics
            try h.pipeline.useRenditionTables(sides: [64, 256], capacity: 8)
            let request = h.request(target: Self.target)
            let (_, first) = await h.fetch(request)
            let shown = try #require(first.finalResult?.image.bitmap)
            #expect(first.finalResult?.source == .network && Self.decodes(metrics) == 1)
            // Kept in the smallest table that holds 128 px.
            #expect(h.pipeline.renditionTables?.tables.map(\.count) == [0, 1])

            h.pipeline.clearMemoryCaches()
            let (delegate, second) = await h.fetch(request)
            #expect(delegate.attempts == [.memoryCache, .diskCache])
            #expect(second.finalResult?.source == .diskCache)
            #expect(second.metrics?.info(for: .diskCache)?.wasLoadedFromRenditionTable == true)
            #expect(second.finalResult?.image.bitmap.packedPixels() == shown.packedPixels())
            #expect(second.finalResult?.originalDimensions == h.imageSize)
            #expect(Self.decodes(metrics) == 1)
            #expect(try metrics.expectCounter(PipelineMetricLabels.cacheLookups,
                                              [("pipeline", h.pipeline.identifier), ("layer", "table"), ("result", "hit")]).totalValue == 1)
            // The rendition went to the rendered cache: the next fetch completes synchronously.
            let synchronous = h.onDelegateQueue { () -> FetchResult? in
                let operation = h.pipeline.operation(with: request, delegate: nil)
                h.pipeline.fetchImage(with: operation)
                return operation.finalResult
            }
            #expect(synchronous != nil)

            // A new set of tables over the same files (the next launch) finds the rendition.
            h.pipeline.clearMemoryCaches()
            try h.pipeline.useRenditionTables(sides: [64, 256], capacity: 8)
            #expect(h.pipeline.renditionTables?.tables.map(\.count) == [0, 1])
            let (_, relaunched) = await h.fetch(request)
            #expect(relaunched.metrics?.info(for: .diskCache)?.wasLoadedFromRenditionTable == true)
            #expect(relaunched.finalResult?.image.bitmap.packedPixels() == shown.packedPixels())
            #expect(Self.decodes(metrics) == 1)
            #expect(h.server.requestLog.count == 1)
        }
    }

    @Test("A memory hit uses the kept rendition too; another target or transformer decodes and keeps its own")
    func memoryHitAndOtherTargets() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            let metrics = TestMetrics()
            h.configuration.metricsFactory = metrics
            try h.pipeline.useRenditionTables(sides: [256], capacity: 8)
            _ = await h.fetch(h.request(target: Self.target))
            h.configuration.clearAllRenderedMemoryCaches()
            let (_, fromMemory) = await h.fetch(h.request(target: Self.target))
            #expect(fromMemory.finalResult?.source == .memoryCache)
            #expect(fromMemory.metrics?.info(for: .memoryCache)?.wasLoadedFromRenditionTable == true)
            #expect(Self.decodes(metrics) == 1)

            let (_, larger) = await h.fetch(h.request(target: PixelSize(width: 200, height: 200)))
            #expect(larger.metrics?.info(for: .memoryCache)?.wasLoadedFromRenditionTable == false)
            #expect(Self.decodes(metrics) == 2)
            var transformed = h.request(target: Self.target)
            transformed.transformer = ShrinkingTransformer(identifier: "grey")
            let (_, grey) = await h.fetch(transformed)
            #expect(grey.metrics?.info(for: .memoryCache)?.wasLoadedFromRenditionTable == false)
            #expect(Self.decodes(metrics) == 3)
            #expect(h.pipeline.renditionTables?.tables[0].count == 3)
            // Too large for every table: decoded, never kept.
            _ = await h.fetch(h.request(target: PixelSize(width: 400, height: 400)))
            #expect(h.pipeline.renditionTables?.tables[0].count == 3)

            h.configuration.clearAllRenderedMemoryCaches()
            let (_, greyAgain) = await h.fetch(transformed)
            #expect(greyAgain.metrics?.info(for: .memoryCache)?.wasLoadedFromRenditionTable == true)
            #expect(greyAgain.finalResult?.imageWasTransformed == true)
            #expect(greyAgain.finalResult?.image.bitmap.packedPixels().allSatisfy { $0 == 0x80 } == true)
            #expect(Self.decodes(metrics) == 4)
        }
    }

    @Test("An animation keeps its first frame: a cached GIF shows it at once, then decodes every frame")
    func animatedFirstFrame() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            try h.pipeline.useRenditionTables(sides: [256], capacity: 8)
            let gif = try Data(contentsOf: ProgressiveTests.images.appendingPathComponent("fire.gif"))
            h.server.setAsset(gif, at: "/fire.gif", contentType: "image/gif")
            let request = h.request("/fire.gif", identifier: "F", target: PixelSize(width: 64, height: 64))
            let (_, first) = await h.fetch(request)
            let animation = try #require(first.finalResult?.image)
            #expect(animation.frameCount > 1 && h.pipeline.renditionTables?.tables[0].count == 1)

            h.pipeline.clearMemoryCaches()
            let (delegate, second) = await h.fetch(request)
            #expect(delegate.events.filter { $0 == .firstAnimatedFrame }.count == 1)
            let shownFirst = try #require(second.progressiveResult)
            #expect(shownFirst.wasLoadedFromRenditionTable && shownFirst.source == .diskCache)
            #expect(shownFirst.image.bitmap.packedPixels() == animation.frames[0].bitmap.packedPixels())
            #expect(delegate.events.last == .final(.diskCache))
            #expect(second.finalResult?.image.frameCount == animation.frameCount)
            #expect(second.finalResult?.wasLoadedFromRenditionTable == false)
        }
    }

    @Test("Clearing or replacing an image forgets its renditions: no stale pixels after a store, a clear or a disk purge")
    func invalidation() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            try h.pipeline.useRenditionTables(sides: [256], capacity: 8)
            let request = h.request(target: Self.target)
            let (_, first) = await h.fetch(request)
            let original = try #require(first.finalResult?.image.bitmap.packedPixels())

            // Another image stored under the same identifier and URL.
            let other = try Data(contentsOf: PreviewTests.smallerImage)
            let store = h.pipeline.store(StoreRequest(url: request.url, identifier: "I", source: .data(other)))
            #expect(try await eventually { store.isFinished })
            #expect(h.pipeline.renditionTables?.tables[0].count == 0)
            h.pipeline.clearMemoryCaches()
            let (_, replaced) = await h.fetch(request)
            #expect(replaced.metrics?.info(for: .diskCache)?.wasLoadedFromRenditionTable == false)
            #expect(replaced.finalResult?.image.bitmap.packedPixels() != original)
            #expect(h.pipeline.renditionTables?.tables[0].count == 1)

            h.pipeline.clearImage(identifier: "I")
            #expect(h.pipeline.renditionTables?.tables[0].count == 0)
            let (_, refetched) = await h.fetch(request)
            #expect(refetched.finalResult?.source == .network)
            #expect(refetched.finalResult?.image.bitmap.packedPixels() == original)
            h.configuration.clearAllDiskCaches()
            #expect(h.pipeline.renditionTables?.tables[0].count == 0)
        }
    }
}
