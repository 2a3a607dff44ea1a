import Foundation
import Testing
import TestSupport
@testable import ImagePipelineKit

@Suite("Pipeline cache operations (scenarios 47-51)")
struct PipelineCacheOperationsTests {
    let configuration = GlobalConfiguration()
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-ops-\(UUID().uuidString)")
    let name = "ops" + String(UUID().uuidString.prefix(8))

    func pipeline() throws -> ImagePipeline {
        try ImagePipeline(identifier: name, configuration: configuration, cacheRoot: root)
    }

    func image(_ bytes: Int, width: Int = 100) -> CachedImageData {
        CachedImageData(data: Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 13) }), url: URL(string: "http://t/a")!,
                        dimensions: PixelSize(width: width, height: width * 4 / 5))
    }

    @Test("Scenario 47: changing I to J moves the disk entry and forgets I everywhere")
    func changeIdentifier() throws {
        let p = try pipeline()
        p.diskCache?.storeComplete(image(500), identifier: "I")
        p.memoryCache.storeComplete(image(500), identifier: "I")
        try p.changeIdentifier("I", to: "J")
        #expect(p.diskCache?.entry(for: "J")?.complete?.data == image(500).data)
        #expect(p.diskCache?.entry(for: "I") == nil && p.memoryCache.entry(for: "I") == nil)
        #expect(throws: DiskCacheError.file(operation: "move", errno: ENOENT)) { try p.changeIdentifier("missing", to: "K") }
    }

    @Test("Scenario 48: clearing an identifier empties all three caches for it")
    func clearIdentifier() throws {
        let p = try pipeline()
        p.diskCache?.storeComplete(image(100), identifier: "I")
        p.memoryCache.storeComplete(image(100), identifier: "I")
        p.renderedCache.store(RenderedImage(image: ImageContainer(bitmap: try Bitmap(width: 8, height: 8) { _, _ in }),
                                            transformerIdentifier: nil, sourceDimensions: PixelSize(width: 8, height: 8),
                                            isDirty: false), identifier: "I")
        p.clearImage(identifier: "I")
        let inspection = p.inspect()
        #expect(inspection.completeDiskEntries.isEmpty && inspection.completeMemoryEntries.isEmpty
                && inspection.completeRenderedEntries.isEmpty)
    }

    @Test("Scenario 49: a cleared disk cache's directory goes once the pipeline is released")
    func clearDiskCache() async throws {
        var p: ImagePipeline? = try pipeline()
        p?.diskCache?.storeComplete(image(100), identifier: "I")
        #expect(ImagePipeline.knownIdentifiers(cacheRoot: root) == [name])
        p?.clearDiskCache()
        #expect(p?.diskCache?.totalCount == 0)
        p = nil
        // The open's background sweep may hold the cache for the length of one batch: the release, and with it
        // the directory's removal, can land on the sweep's thread a moment later.
        #expect(try await eventually { ImagePipeline.knownIdentifiers(cacheRoot: root).isEmpty })
    }

    @Test("Scenario 50: copying a disk entry gives a readable temporary file, deleted afterwards; absent is ENOENT")
    func copyDiskFile() throws {
        let p = try pipeline()
        p.diskCache?.storeComplete(image(700), identifier: "I")
        var copied: URL?
        let bytes = try p.withCopyOfDiskCacheFile(identifier: "I") { url in
            copied = url
            return try Data(contentsOf: url)
        }
        #expect(bytes == image(700).data)
        #expect(!FileManager.default.fileExists(atPath: copied!.path))
        #expect(throws: DiskCacheError.file(operation: "copy", errno: ENOENT)) {
            try p.withCopyOfDiskCacheFile(identifier: "absent") { _ in }
        }
    }

    @Test("Scenario 51: a reopened pipeline inspects to the same disk entries (identifier, URL, size, bytes, progress)")
    func reopenInspection() throws {
        var p: ImagePipeline? = try pipeline()
        p?.diskCache?.storeComplete(image(400, width: 100), identifier: "I")
        p?.diskCache?.storePartial(PartialImageData(data: Data(count: 250), url: URL(string: "http://t/big")!,
                                                    dimensions: PixelSize(width: 1000, height: 800), expectedByteCount: 1000),
                                   identifier: "J")
        let before = try #require(p?.inspect())
        #expect(before.completeDiskEntries.count == 1 && before.partialDiskEntries.first?.progress == 0.25)
        p = nil
        let after = try pipeline().inspect()
        #expect(after.completeDiskEntries == before.completeDiskEntries)
        #expect(after.partialDiskEntries == before.partialDiskEntries)
        #expect(after.onDiskBytesUsed == 650)
    }
}
