import Dispatch
import Foundation
import PipelineLocking
import Testing
import TestSupport
@testable import ImagePipelineKit

@Suite("Fetch queue target: the fetches of a configuration run their steps on the queue it names")
struct FetchQueueTargetTests {
    /// Notes which queue, by its specific value, the fetch's steps ran on: a transformer runs on the fetch's
    /// queue, and `getSpecific` reads a value set on that queue's target.
    final class QueueProbe: ImageTransformer {
        static let key = DispatchSpecificKey<String>()
        private let seen = Locked<[String?]>([])

        func transform(_ image: ImageContainer, progress: Double, targetSizing: TargetSizing) -> ImageContainer? {
            seen.withLock { $0.append(DispatchQueue.getSpecific(key: Self.key)) }
            return nil
        }

        var marks: [String?] { seen.withLock { $0 } }
    }

    /// A new pipeline on `configuration` under `root` whose memory cache holds a 40x30 JPEG at the URL returned.
    static func pipelineWithCachedJPEG(on configuration: GlobalConfiguration, root: URL) throws -> (ImagePipeline, URL) {
        let pipeline = try ImagePipeline(identifier: "cached" + String(UUID().uuidString.prefix(8)),
                                         configuration: configuration, cacheRoot: root)
        let url = URL(string: "http://127.0.0.1:9/cached.jpg")!
        pipeline.memoryCache.storeComplete(
            CachedImageData(data: try StoreOperationTests.jpeg(), url: url, dimensions: PixelSize(width: 40, height: 30)),
            identifier: url.absoluteString)
        return (pipeline, url)
    }

    /// Fetches a JPEG from the memory cache of a new pipeline on `configuration`, through `probe`.
    private func fetch(on configuration: GlobalConfiguration, through probe: QueueProbe) async throws -> FetchResult {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-target-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let (pipeline, url) = try Self.pipelineWithCachedJPEG(on: configuration, root: root)
        return try await pipeline.image(for: GenericFetchRequest(url: url, loadingSources: [.memoryCache], transformer: probe))
    }

    @Test("With a target, the fetch's steps run on it; without one, on a queue of the fetch's own")
    func stepsRunOnTheTarget() async throws {
        let target = DispatchQueue(label: "FetchQueueTargetTests.fetches", attributes: .concurrent)
        target.setSpecific(key: QueueProbe.key, value: "the configuration's target")

        let targeted = GlobalConfiguration()
        #expect(targeted.fetchQueueTarget == nil)
        targeted.fetchQueueTarget = target
        let probe = QueueProbe()
        let result = try await fetch(on: targeted, through: probe)
        #expect(result.source == .memoryCache && result.image.dimensions == PixelSize(width: 40, height: 30))
        #expect(!probe.marks.isEmpty && probe.marks.allSatisfy { $0 == "the configuration's target" })

        let unset = QueueProbe()
        _ = try await fetch(on: GlobalConfiguration(), through: unset)
        #expect(!unset.marks.isEmpty && unset.marks.allSatisfy { $0 == nil })
    }

    @Test("With a target, a thread that starts a fetch never waits for the fetch's queue: the fetch runs once the target is free")
    func startDoesNotWaitForTheTarget() async throws {
        // A target every pool thread could be waiting on: here one serial queue, held by a block until released.
        let target = DispatchQueue(label: "FetchQueueTargetTests.busy")
        let release = DispatchSemaphore(value: 0)
        target.async { _ = release.wait(timeout: .now() + 60) }
        let configuration = GlobalConfiguration()
        configuration.fetchQueueTarget = target
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-target-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let (pipeline, url) = try Self.pipelineWithCachedJPEG(on: configuration, root: root)
        let outcome = Locked<Result<FetchResult, FetchError>?>(nil)
        let operation = pipeline.operation(with: GenericFetchRequest(url: url, loadingSources: [.memoryCache])) { result in
            outcome.withLock { $0 = result }
        }
        let startReturned = Locked(false)
        DispatchQueue.global().async {
            operation.start()
            startReturned.withLock { $0 = true }
        }
        // A `sync` onto the fetch's queue would hold this thread until the target is released.
        #expect(try await eventually(timeout: .seconds(5)) { startReturned.withLock { $0 } })
        #expect(outcome.withLock { $0 } == nil)
        release.signal()
        #expect(try await eventually { outcome.withLock { $0 } != nil })
        let result = try #require(outcome.withLock { $0 }).get()
        #expect(result.source == .memoryCache)
    }
}
