import Foundation
import ImageOriginServer
import ImagePipelineKit
import Synchronization
import Testing
import TestSupport
import PipelineLocking

/// Hands back a flat grey image (one pixel smaller on each side), so the change shows in the pixels, and
/// records the progress of each call.
final class ShrinkingTransformer: ImageTransformer {
    let identifier: String?
    let calls = Locked<[Double]>([])

    init(identifier: String?) { self.identifier = identifier }

    func transform(_ image: ImageContainer, progress: Double, targetSizing: TargetSizing) -> ImageContainer? {
        calls.withLock { $0.append(progress) }
        let size = image.dimensions
        guard size.width > 1, size.height > 1,
              let bitmap = try? Bitmap(width: size.width - 1, height: size.height - 1, initializer: { pixels, stride in
                  memset(pixels, 0x80, stride * (size.height - 1))
              })
        else { return nil }
        return ImageContainer(bitmap: bitmap)
    }
}

@Suite("More fetch scenarios (12, 13, 14, 18, 26, 59, 60)", .serialized)
struct MoreFetchScenarioTests {
    /// Runs `request` on the delegate queue; true when it finished before `fetchImage(with:)` returned.
    static func completesSynchronously(_ request: any FetchRequest, _ h: FetchHarness) -> Bool {
        h.onDelegateQueue { () -> Bool in
            let operation = h.pipeline.operation(with: request, delegate: nil)
            h.pipeline.fetchImage(with: operation)
            return operation.isFinished
        }
    }

    @Test("Scenario 12: skipStoringToRenderedCache keeps the rendition out: the repeat is asynchronous, from memory", arguments: CoordinatorDownloader.allCases)
    func skipRendered(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let target = PixelSize(width: 100, height: 100)
            _ = await h.fetch(h.request(target: target, options: [.skipStoringToRenderedCache]))
            #expect(!Self.completesSynchronously(h.request(target: target), h))
            let (_, repeatFetch) = await h.fetch(h.request(target: target))
            #expect(repeatFetch.finalResult?.source == .memoryCache)
        }
    }

    @Test("Scenario 13: a placeholder never enters the rendered cache, is flagged, and a real image of I replaces it", arguments: CoordinatorDownloader.allCases)
    func placeholder(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let target = PixelSize(width: 100, height: 100)
            let (_, placeholder) = await h.fetch(h.request(target: target, options: [.treatAsPlaceholder]))
            #expect(placeholder.finalResult?.isPlaceholder == true)
            #expect(h.pipeline.renderedCache.entries.isEmpty)
            #expect(h.pipeline.memoryCache.entry(for: "I")?.complete?.isPlaceholder == true)
            #expect(h.pipeline.diskCache?.entry(for: "I")?.complete?.isPlaceholder == true)
            // A real image, even a smaller one from another URL, replaces the placeholder in memory and on disk.
            h.server.setAsset(try Data(contentsOf: PreviewTests.smallerImage), at: "/b.png", contentType: "image/png")
            let (_, real) = await h.fetch(h.request("/b.png", target: target))
            #expect(real.finalResult?.source == .network && real.finalResult?.isPlaceholder == false)
            #expect(h.pipeline.memoryCache.entry(for: "I")?.complete?.url == h.server.url(for: "/b.png"))
            #expect(h.pipeline.diskCache?.entry(for: "I")?.complete?.isPlaceholder == false)
        }
    }

    @Test("Scenario 14: a transformer without an identifier is never read synchronously; one with an identifier is, and only for itself", arguments: CoordinatorDownloader.allCases)
    func transformers(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let target = PixelSize(width: 100, height: 100)
            var anonymous = h.request(target: target)
            let plain = ShrinkingTransformer(identifier: nil)
            anonymous.transformer = plain
            let (_, first) = await h.fetch(anonymous)
            let final = try #require(first.finalResult)
            #expect(final.imageWasTransformed && plain.calls.withLock { $0 } == [1])
            #expect(!Self.completesSynchronously(anonymous, h))
            #expect(h.pipeline.renderedCache.entries.isEmpty)

            var blurred = h.request(target: target)
            blurred.transformer = ShrinkingTransformer(identifier: "blur")
            let named = blurred
            _ = await h.fetch(named)   // from memory, transformed, kept under "blur"
            #expect(Self.completesSynchronously(named, h))
            let synchronous = h.onDelegateQueue { () -> FetchResult? in
                let operation = h.pipeline.operation(with: named, delegate: nil)
                h.pipeline.fetchImage(with: operation)
                return operation.finalResult
            }
            #expect(synchronous?.imageWasTransformed == true)
            // The untransformed request does not match the "blur" rendition.
            #expect(!Self.completesSynchronously(h.request(target: target), h))
            // The memory cache kept the untransformed bytes.
            let (_, untransformed) = await h.fetch(h.request(target: target))
            #expect(untransformed.finalResult?.imageWasTransformed == false)
            // The transformer's output is flat grey (scaled to the target afterwards); the photo is not.
            #expect(final.image.bitmap.packedPixels().allSatisfy { $0 == 0x80 })
            #expect(untransformed.finalResult?.image.bitmap.packedPixels().allSatisfy { $0 == 0x80 } == false)
        }
    }

    @Test("Scenario 18: with a smaller image of I cached, fetching the larger one previews the small, then stores the large; the small then gets a preview of the large", arguments: CoordinatorDownloader.allCases)
    func smallerCachedLargerRequested(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            h.server.setAsset(try Data(contentsOf: PreviewTests.smallerImage), at: "/b.png", contentType: "image/png")
            _ = await h.fetch(h.request("/b.png"))   // I via B (451×300)
            let (delegate, large) = await h.fetch(h.request())   // I via A (640×427)
            #expect(delegate.previews.first?.url == h.server.url(for: "/b.png"))
            #expect(large.finalResult?.source == .network)
            #expect(h.pipeline.diskCache?.entry(for: "I")?.complete?.dimensions == h.imageSize)
            let (later, _) = await h.fetch(h.request("/b.png"))
            #expect(later.previews.first?.url == h.server.url(for: "/a.jpg"))
        }
    }

    @Test("Scenario 26: resume-only sources with a partial, and a server that answers 200: code 6", arguments: CoordinatorDownloader.allCases)
    func resumeOnlyGetsAWholeImage(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            _ = try await h.cancelHalfway(atProgress: 0.2)
            #expect(h.pipeline.memoryCache.entry(for: "I")?.partial != nil)
            h.server.setFaults([.ignoreRange], for: "/a.jpg")
            let (_, resumeOnly) = await h.fetch(h.request(sources: [.memoryCache, .diskCache, .networkResumed]))
            #expect(resumeOnly.error?.code == .couldNotLoadImage)
        }
    }

    @Test("Scenario 59: an animated GIF's final image has all its frames and their durations", arguments: CoordinatorDownloader.allCases)
    func animatedFinal(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let gif = try Data(contentsOf: ProgressiveTests.images.appendingPathComponent("fire.gif"))
            h.server.setAsset(gif, at: "/fire.gif", contentType: "image/gif")
            let (_, operation) = await h.fetch(h.request("/fire.gif", identifier: "F"))
            let reference = try CodecCatalogue.shared.decode(gif).container
            let final = try #require(operation.finalResult?.image)
            #expect(final.frameCount == reference.frameCount && final.frameCount > 1)
            #expect(final.frameDurations == reference.frameDurations)
        }
    }

    @Test("Scenario 60, better than TIP: a fetch at 100² reports the file's dimensions as original, as the disk entry does", arguments: CoordinatorDownloader.allCases)
    func originalDimensions(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let (_, operation) = await h.fetch(h.request(target: PixelSize(width: 100, height: 100)))
            #expect(operation.finalResult?.image.dimensions.width == 100)
            #expect(operation.finalResult?.originalDimensions == h.imageSize)
            #expect(h.pipeline.diskCache?.entry(for: "I")?.complete?.dimensions == h.imageSize)
        }
    }
}
