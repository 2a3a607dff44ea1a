import Foundation
import Testing
@testable import ImagePipelineKit

/// An animation holds one bitmap per frame, so it is reduced to a target but never enlarged: a small GIF in a
/// large cell would otherwise hold the cell's area once per frame.
@Suite("Animations are never enlarged")
struct AnimationSizingTests {
    static let large = TargetSizing(dimensions: PixelSize(width: 64, height: 64), contentMode: .fill)

    @Test("Decoded at a larger target, an animation keeps its size; a still is enlarged; a smaller target reduces both")
    func decodeSizes() throws {
        let animation = GIFGeneratedTests.animation(frames: 3, width: 8, height: 4)
        let kept = try CodecCatalogue.shared.decode(animation, target: Self.large).container
        #expect(kept.isAnimated && kept.frameCount == 3)
        #expect(kept.frames.allSatisfy { $0.bitmap.size == PixelSize(width: 8, height: 4) })

        let still = try CodecCatalogue.shared.decode(GIFGeneratedTests.animation(frames: 1, width: 8, height: 4),
                                                     target: Self.large).container
        #expect(!still.isAnimated && still.dimensions == PixelSize(width: 128, height: 64), "TIP's fill of 8x4 into 64x64")

        let small = TargetSizing(dimensions: PixelSize(width: 4, height: 4), contentMode: .fit)
        let reduced = try CodecCatalogue.shared.decode(animation, target: small).container
        #expect(reduced.frames.allSatisfy { $0.bitmap.size == PixelSize(width: 4, height: 2) })
        #expect(try kept.scaled(for: small).frames.allSatisfy { $0.bitmap.size == PixelSize(width: 4, height: 2) })
        #expect(try kept.scaled(for: Self.large).frames.allSatisfy { $0.bitmap.size == PixelSize(width: 8, height: 4) })
    }

    @Test("A stretch target reduces the axis it shrinks and keeps the one it would enlarge")
    func stretch() {
        let target = TargetSizing(dimensions: PixelSize(width: 4, height: 40), contentMode: .stretch)
        #expect(target.scaledSize(ofAnimation: PixelSize(width: 8, height: 4)) == PixelSize(width: 4, height: 4))
    }

    @Test("A fetch of an animation at a larger target renders it at its own size, and the next fetch hits the rendered cache")
    func fetchAndRenderedHit() async throws {
        let configuration = GlobalConfiguration()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-anim-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let pipeline = try ImagePipeline(identifier: "anim" + String(UUID().uuidString.prefix(8)),
                                         configuration: configuration, cacheRoot: root)
        let url = URL(string: "http://127.0.0.1:9/a.gif")!
        pipeline.memoryCache.storeComplete(
            CachedImageData(data: GIFGeneratedTests.animation(frames: 3, width: 8, height: 4), url: url,
                            dimensions: PixelSize(width: 8, height: 4), isAnimated: true),
            identifier: url.absoluteString)
        let request = GenericFetchRequest(url: url, targetSizing: Self.large, loadingSources: [.memoryCache])
        let first = try await pipeline.image(for: request)
        let second = try await pipeline.image(for: request)
        try check(first: first, second: second, rendered: pipeline.renderedCache.image(for: url.absoluteString, target: Self.large))
    }

    private func check(first: FetchResult, second: FetchResult, rendered: RenderedImage?) throws {
        #expect(first.image.frameCount == 3 && first.image.dimensions == PixelSize(width: 8, height: 4))
        let hit = try #require(rendered, "the rendition at its own size answers the larger target")
        #expect(hit.dimensions == PixelSize(width: 8, height: 4) && hit.isAnimated)
        #expect(second.source == .memoryCache && second.image.frames[0].bitmap === first.image.frames[0].bitmap,
                "the second fetch is the rendered cache's hit, not a decode")
    }
}
