import Foundation
import Synchronization
import Testing
import TestSupport
@testable import ImagePipelineKit
import PipelineLocking

@Suite("Store operations (scenarios 44-46)")
struct StoreOperationTests {
    static let queueKey = DispatchSpecificKey<String>()
    let configuration: GlobalConfiguration = {
        let configuration = GlobalConfiguration()
        let queue = DispatchQueue(label: "store-tests.delegate")
        queue.setSpecific(key: StoreOperationTests.queueKey, value: "store-tests.delegate")
        configuration.delegateQueue = queue
        return configuration
    }()
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-store-\(UUID().uuidString)")
    let name = "store" + String(UUID().uuidString.prefix(8))
    let url = URL(string: "http://t/a")!

    func pipeline() throws -> ImagePipeline {
        try ImagePipeline(identifier: name, configuration: configuration, cacheRoot: root)
    }

    static func jpeg() throws -> Data {
        let bitmap = try Bitmap(width: 40, height: 30) { pixels, stride in
            for y in 0..<30 { memset(pixels + y * stride, Int32(y * 8), 40 * 4) }
            for y in 0..<30 { for x in 0..<40 { (pixels + y * stride + x * 4 + 3).storeBytes(of: 255, as: UInt8.self) } }
        }
        return try JPEGEncoder().encode(ImageContainer(bitmap: bitmap), options: [], quality: 0.9)
    }

    /// Runs a store and returns what its completion saw, and on which queue it ran.
    func run(_ request: StoreRequest, in pipeline: ImagePipeline) async -> (Bool, (any Error)?, String) {
        await withCheckedContinuation { continuation in
            pipeline.store(request) { _, succeeded, error in
                continuation.resume(returning: (succeeded, error, DispatchQueue.getSpecific(key: Self.queueKey) ?? "another queue"))
            }
        }
    }

    @Test("Scenario 44: data + dimensions land in memory and on disk; a file-only store lands on disk only")
    func storeDataAndFile() async throws {
        let p = try pipeline()
        let data = try Self.jpeg()
        let (succeeded, error, queue) = await run(
            StoreRequest(url: url, identifier: "I", source: .data(data), dimensions: PixelSize(width: 40, height: 30)), in: p)
        #expect(succeeded && error == nil)
        #expect(queue == "store-tests.delegate")
        #expect(p.memoryCache.entry(for: "I")?.complete?.data == data)
        #expect(p.diskCache?.entry(for: "I")?.complete?.dimensions == PixelSize(width: 40, height: 30))

        let file = root.appendingPathComponent("source.jpg")
        try data.write(to: file)
        let (fileStored, _, _) = await run(StoreRequest(url: url, identifier: "F", source: .file(file)), in: p)
        #expect(fileStored)
        #expect(p.memoryCache.entry(for: "F") == nil)
        // Dimensions were detected from the bytes.
        #expect(p.diskCache?.entry(for: "F")?.complete?.dimensions == PixelSize(width: 40, height: 30))
    }

    @Test("A decoded image is encoded for the disk cache and its stale memory entry is dropped")
    func storeImage() async throws {
        let p = try pipeline()
        p.memoryCache.storeComplete(CachedImageData(data: Data(count: 5), url: url, dimensions: PixelSize(width: 1, height: 1)),
                                    identifier: "I")
        let image = try CodecCatalogue.shared.decode(Self.jpeg()).container
        let (succeeded, _, _) = await run(StoreRequest(url: url, identifier: "I", source: .image(image)), in: p)
        #expect(succeeded)
        #expect(p.memoryCache.entry(for: "I") == nil)
        let stored = try #require(p.diskCache?.entry(for: "I")?.complete?.data)
        #expect(try CodecCatalogue.shared.decode(stored).properties.type == .jpeg)
    }

    @Test("Scenario 45: no image is error 1; a hydration error fails the store with it; a substitute is stored")
    func errorsAndHydration() async throws {
        let p = try pipeline()
        let (noImage, noImageError, _) = await run(StoreRequest(url: url, source: nil), in: p)
        #expect(!noImage && (noImageError as? StoreError)?.code == .imageNotProvided)

        struct Refused: Error {}
        let (hydrated, hydrationError, _) = await run(
            StoreRequest(url: url, source: .data(try Self.jpeg()), hydration: { _, _ in throw Refused() }), in: p)
        #expect(!hydrated && hydrationError is Refused)

        let substitute = StoreRequest(url: URL(string: "http://t/substitute")!, identifier: "S", source: .data(try Self.jpeg()))
        let (stored, _, _) = await run(
            StoreRequest(url: url, identifier: "original", source: nil, hydration: { _, _ in substitute }), in: p)
        #expect(stored)
        #expect(p.diskCache?.entry(for: "S")?.complete?.url == substitute.url)
        #expect(p.diskCache?.entry(for: "original") == nil)
    }

    @Test("Scenario 46: an operation made dependent on a store starts only after the store finished")
    func dependency() async throws {
        let p = try pipeline()
        let slow = StoreRequest(url: url, identifier: "I", source: .data(try Self.jpeg()), hydration: { request, _ in
            try await Task.sleep(for: .milliseconds(200))
            return request
        })
        let store = p.store(slow)
        let sawEntry = Locked<Bool?>(nil)
        let follower = BlockOperation { sawEntry.withLock { $0 = p.diskCache?.entry(for: "I") != nil } }
        store.makeDependency(of: follower)
        configuration.operationQueue.addOperation(follower)
        try await offloaded { follower.waitUntilFinished() }
        #expect(store.isFinished && store.succeeded)
        #expect(sawEntry.withLock { $0 } == true)
        store.cancel()   // a no-op for store operations
        #expect(store.succeeded)
    }
}
