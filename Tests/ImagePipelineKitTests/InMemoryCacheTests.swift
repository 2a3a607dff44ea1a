import Foundation
import Testing
@testable import ImagePipelineKit

/// A solid image of `size` for cache tests (the pixels do not matter, the dimensions and bytes do).
private func image(_ width: Int, _ height: Int) throws -> ImageContainer {
    ImageContainer(bitmap: try Bitmap(width: width, height: height) { pixels, stride in
        memset(pixels, 0x7F, stride * height)
    })
}

private func fill(_ side: Int) -> TargetSizing {
    TargetSizing(dimensions: PixelSize(width: side, height: side), contentMode: .fill)
}

@Suite("Rendered cache: up to three renditions per identifier, the least recently used pushed out")
struct RenderedCacheTests {
    let configuration = GlobalConfiguration()

    func cache(_ owner: String = "p") -> RenderedCache {
        RenderedCache(owner: owner, pool: configuration.renderedPool)
    }

    func rendition(_ side: Int, source: Int = 1000, transformer: String? = nil) throws -> RenderedImage {
        RenderedImage(image: try image(side, side), transformerIdentifier: transformer,
                      sourceDimensions: PixelSize(width: source, height: source), isDirty: false)
    }

    @Test("Scenario 10: an identifier keeps its 3 most recent sizes; the oldest is gone")
    func threeRenditions() throws {
        let cache = cache()
        for side in [100, 200, 300, 400] { cache.store(try rendition(side), identifier: "I") }
        for side in [400, 300, 200] { #expect(cache.image(for: "I", target: fill(side)) != nil, "\(side)") }
        #expect(cache.image(for: "I", target: fill(100)) == nil)
    }

    @Test("Scenario 11: a hit moves its rendition first, so the next store pushes out another size")
    func lruWithinIdentifier() throws {
        let cache = cache()
        for side in [200, 300, 400] { cache.store(try rendition(side), identifier: "I") }
        #expect(cache.entries[0].renditions.map(\.image.dimensions.width) == [400, 300, 200])
        #expect(cache.image(for: "I", target: fill(200)) != nil)
        #expect(cache.entries[0].renditions.map(\.image.dimensions.width) == [200, 400, 300])
        cache.store(try rendition(500), identifier: "I")
        #expect(cache.entries[0].renditions.map(\.image.dimensions.width) == [500, 200, 400])
        #expect(cache.image(for: "I", target: fill(300)) == nil)
    }

    @Test("Lookups need a positive target in a scaling mode, and the same transformer identifier")
    func matching() throws {
        let cache = cache()
        cache.store(try rendition(100, transformer: "blur"), identifier: "I")
        #expect(cache.image(for: "I", target: fill(100)) == nil)
        #expect(cache.image(for: "I", target: fill(100), transformerIdentifier: "blur") != nil)
        #expect(cache.image(for: "I", target: .original, transformerIdentifier: "blur") == nil)
        let center = TargetSizing(dimensions: PixelSize(width: 100, height: 100), contentMode: .center)
        #expect(cache.image(for: "I", target: center, transformerIdentifier: "blur") == nil)
        // Fit 100x100 over a 100x80 rendition: TIP's match rule.
        cache.store(RenderedImage(image: try image(100, 80), transformerIdentifier: nil,
                                  sourceDimensions: PixelSize(width: 1000, height: 800), isDirty: false), identifier: "A")
        #expect(cache.image(for: "A", target: TargetSizing(dimensions: PixelSize(width: 100, height: 100), contentMode: .fit)) != nil)
    }

    @Test("Placeholders are never stored; dirty marks stay on the renditions; clear forgets the identifier")
    func placeholdersDirtyClear() throws {
        let cache = cache()
        cache.store(try rendition(100), identifier: "P", isPlaceholder: true)
        #expect(cache.image(for: "P", target: fill(100)) == nil)
        cache.store(try rendition(100), identifier: "I")
        cache.markDirty(identifier: "I")
        #expect(cache.image(for: "I", target: fill(100))?.isDirty == true)
        cache.clear(identifier: "I")
        #expect(cache.image(for: "I", target: fill(100)) == nil)
        #expect(configuration.totalBytesForAllRenderedCaches == 0)
    }

    @Test("A clean rendition from a larger source is not replaced by one from a smaller source; a dirty one is")
    func replacementBySource() throws {
        let cache = cache()
        cache.store(try rendition(100, source: 1000), identifier: "I")
        cache.store(try rendition(100, source: 500), identifier: "I")
        #expect(cache.image(for: "I", target: fill(100))?.sourceDimensions.width == 1000)
        cache.markDirty(identifier: "I")
        cache.store(try rendition(100, source: 500), identifier: "I")
        let hit = try #require(cache.image(for: "I", target: fill(100)))
        #expect(hit.sourceDimensions.width == 500 && !hit.isDirty)
    }

    @Test("A hit hands out the cached bitmap itself: no pixel copy")
    func sharedReference() throws {
        let cache = cache()
        let stored = try rendition(64)
        cache.store(stored, identifier: "I")
        #expect(cache.image(for: "I", target: fill(64))?.image.bitmap === stored.image.bitmap)
    }

    @Test("A released pipeline's rendered cache gives its bytes back to the global total")
    func releaseGivesBackTotals() throws {
        var cache: RenderedCache? = cache("gone")
        cache!.store(try rendition(64), identifier: "I")
        #expect(configuration.totalBytesForAllRenderedCaches == 64 * 4 * 64)
        cache = nil
        #expect(configuration.totalBytesForAllRenderedCaches == 0)
    }
}

@Suite("Memory cache: TIP's replacement rules, and global limits that prune other pipelines first")
struct MemoryCacheTests {
    let configuration = GlobalConfiguration()
    let url = URL(string: "http://t/a")!

    func cache(_ owner: String) -> MemoryCache { MemoryCache(owner: owner, pool: configuration.memoryPool) }

    func complete(_ bytes: Int, _ width: Int = 100, url: URL? = nil, placeholder: Bool = false,
                  ttl: TimeInterval = 3600, updates: Bool = true, at date: Date = Date()) -> CachedImageData {
        CachedImageData(data: Data(repeating: 1, count: bytes), url: url ?? self.url,
                        dimensions: PixelSize(width: width, height: width), isPlaceholder: placeholder,
                        timeToLive: ttl, updatesExpiryOnAccess: updates, lastAccess: date)
    }

    @Test("Scenario 41: over the count limit, other pipelines lose their oldest entries before the writer does")
    func globalCountLimit() {
        configuration.maxCountForAllMemoryCaches = 2
        let p1 = cache("p1"), p2 = cache("p2")
        for name in ["a", "b", "c"] { p1.storeComplete(complete(10), identifier: name) }
        #expect(p1.entries.map(\.identifier) == ["c", "b"])
        p2.storeComplete(complete(10), identifier: "z")
        #expect(p1.entries.map(\.identifier) == ["c"])
        #expect(p2.entries.map(\.identifier) == ["z"])
        #expect(configuration.totalCountForAllMemoryCaches == 2)
    }

    @Test("Over the byte limit, pruning goes round the other pipelines one tail entry at a time")
    func globalByteLimit() {
        configuration.maxRatioSizeOfCacheEntry = 0
        configuration.maxBytesForAllMemoryCaches = 100
        let p1 = cache("p1"), p2 = cache("p2"), p3 = cache("p3")
        p1.storeComplete(complete(30), identifier: "a1")
        p1.storeComplete(complete(30), identifier: "a2")
        p2.storeComplete(complete(30), identifier: "b1")
        p3.storeComplete(complete(50), identifier: "c1")   // 140 bytes: one round takes a1 and b1
        #expect(p1.entries.map(\.identifier) == ["a2"])
        #expect(p2.entries.isEmpty)
        #expect(p3.entries.map(\.identifier) == ["c1"])
        #expect(configuration.totalBytesForAllMemoryCaches == 80)
    }

    @Test("Scenario 42: a byte limit of 0 retains nothing; a negative limit restores the default")
    func zeroDisables() {
        configuration.maxBytesForAllMemoryCaches = 0
        let p = cache("p")
        #expect(!p.storeComplete(complete(10), identifier: "a"))
        #expect(p.entry(for: "a") == nil)
        configuration.maxBytesForAllMemoryCaches = -1
        #expect(configuration.maxBytesForAllMemoryCaches == GlobalConfiguration.defaultMaxBytesForAllMemoryCaches)
        #expect(p.storeComplete(complete(10), identifier: "a"))
    }

    @Test("Per-entry cap: an entry over 1/ratio of the byte limit is refused; ratio 0 lifts the cap")
    func perEntryCap() {
        configuration.maxBytesForAllMemoryCaches = 600
        let p = cache("p")
        #expect(!p.storeComplete(complete(200), identifier: "big"))   // cap 600 / 6 = 100
        configuration.maxRatioSizeOfCacheEntry = 0
        #expect(p.storeComplete(complete(200), identifier: "big"))
    }

    @Test("Replacement: placeholders never replace real images, real images replace placeholders, larger wins")
    func replacementRules() {
        let p = cache("p")
        #expect(p.storeComplete(complete(10, 100, placeholder: true), identifier: "I"))
        #expect(p.storeComplete(complete(10, 50), identifier: "I"))   // real replaces placeholder, even smaller
        #expect(!p.storeComplete(complete(10, 500, placeholder: true), identifier: "I"))
        #expect(!p.storeComplete(complete(10, 40, url: URL(string: "http://t/b")!), identifier: "I"))
        #expect(p.storeComplete(complete(10, 60, url: URL(string: "http://t/b")!), identifier: "I"))
        #expect(p.entry(for: "I")?.complete?.dimensions.width == 60)
        #expect(p.storeComplete(complete(10, 10), identifier: "I", forced: true))
    }

    @Test("A complete image at least as large evicts the partial; placeholders and smaller partials are ignored")
    func partials() {
        let p = cache("p")
        let partial = PartialImageData(data: Data(count: 5), url: url, dimensions: PixelSize(width: 100, height: 100),
                                       expectedByteCount: 50, lastModified: "Wed, 15 Nov 1995 04:58:08 GMT")
        #expect(!p.storePartial(partial, identifier: "I", isPlaceholder: true))
        #expect(p.storePartial(partial, identifier: "I"))
        var smaller = partial
        smaller.dimensions = PixelSize(width: 10, height: 10)
        #expect(!p.storePartial(smaller, identifier: "I"))
        p.storeComplete(complete(10, 100), identifier: "I")
        #expect(p.entry(for: "I")?.partial == nil)
        #expect(configuration.totalBytesForAllMemoryCaches == 10)
    }

    @Test("Expired parts are dropped on read; an access extends the time to live unless the entry does not update expiry on access")
    func timeToLive() {
        let p = cache("p")
        let start = Date(timeIntervalSinceReferenceDate: 1_000_000)
        p.storeComplete(complete(10, ttl: 10, updates: true, at: start), identifier: "sliding")
        p.storeComplete(complete(10, ttl: 10, updates: false, at: start), identifier: "fixed")
        #expect(p.entry(for: "sliding", now: start + 6) != nil)
        #expect(p.entry(for: "fixed", now: start + 6) != nil)
        #expect(p.entry(for: "sliding", now: start + 11) != nil)
        #expect(p.entry(for: "fixed", now: start + 11) == nil)
        #expect(p.entries.map(\.identifier) == ["sliding"])
        #expect(configuration.totalCountForAllMemoryCaches == 1)
    }
}
