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
        return (pipeline, try cacheJPEG(at: "cached.jpg", in: pipeline))
    }

    /// Puts a 40x30 JPEG in `pipeline`'s memory cache under a URL ending in `name`, and returns the URL.
    static func cacheJPEG(at name: String, in pipeline: ImagePipeline) throws -> URL {
        let url = URL(string: "http://127.0.0.1:9/\(name)")!
        pipeline.memoryCache.storeComplete(
            CachedImageData(data: try StoreOperationTests.jpeg(), url: url, dimensions: PixelSize(width: 40, height: 30)),
            identifier: url.absoluteString)
        return url
    }

    /// Fetches a JPEG from the memory cache of a new pipeline on `configuration`, through `probe`.
    private func fetch(on configuration: GlobalConfiguration, through probe: QueueProbe) async throws -> FetchResult {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-target-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let (pipeline, url) = try Self.pipelineWithCachedJPEG(on: configuration, root: root)
        return try await pipeline.image(for: GenericFetchRequest(url: url, loadingSources: [.memoryCache], transformer: probe))
    }

    @Test("With a target, the fetch's steps run on it; without one, on a queue of the fetch's own; by default on the utility pool")
    func stepsRunOnTheTarget() async throws {
        let target = DispatchQueue(label: "FetchQueueTargetTests.fetches", attributes: .concurrent)
        target.setSpecific(key: QueueProbe.key, value: "the configuration's target")

        let targeted = GlobalConfiguration()
        #expect(targeted.fetchQueueTarget?.label == DispatchQueue.global(qos: .utility).label)
        targeted.fetchQueueTarget = target
        let probe = QueueProbe()
        let result = try await fetch(on: targeted, through: probe)
        #expect(result.source == .memoryCache && result.image.dimensions == PixelSize(width: 40, height: 30))
        #expect(!probe.marks.isEmpty && probe.marks.allSatisfy { $0 == "the configuration's target" })

        let unset = QueueProbe()
        let ownThreads = GlobalConfiguration()
        ownThreads.fetchQueueTarget = nil
        _ = try await fetch(on: ownThreads, through: unset)
        #expect(!unset.marks.isEmpty && unset.marks.allSatisfy { $0 == nil })
    }

    @Test("With a target, a fetch cancelled before it starts ends cancelled, and the next one runs")
    func cancelledBeforeStart() async throws {
        let configuration = GlobalConfiguration()
        configuration.fetchQueueTarget = .global(qos: .utility)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-target-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let (pipeline, url) = try Self.pipelineWithCachedJPEG(on: configuration, root: root)
        let outcomes = Locked<[Int: Result<FetchResult, FetchError>]>([:])
        let operations = (0..<2).map { index in
            pipeline.operation(with: GenericFetchRequest(url: url, loadingSources: [.memoryCache])) { result in
                outcomes.withLock { $0[index] = result }
            }
        }
        // Cancelled before it starts, the fetch's queue is sent nothing; its steps see the cancel when they begin.
        operations[0].cancel()
        operations.forEach(pipeline.fetchImage(with:))
        #expect(try await eventually { outcomes.withLock { $0.count } == 2 && operations.allSatisfy(\.isFinished) })
        let cancelled = try #require(outcomes.withLock { $0[0] })
        #expect(throws: FetchError.self) { try cancelled.get() }
        #expect((try? cancelled.get()) == nil && operations[0].state == .cancelled)
        #expect(try #require(outcomes.withLock { $0[1] }).get().source == .memoryCache)
    }

    @Test("On a one-thread target, a decode with no room in the decode memory budget leaves the thread to other fetches, and decodes once the memory is given back")
    func decodeWaitingForMemoryLeavesTheThread() async throws {
        let configuration = GlobalConfiguration()
        let target = DispatchQueue(label: "FetchQueueTargetTests.oneThread")
        configuration.fetchQueueTarget = target
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-target-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let (pipeline, first) = try Self.pipelineWithCachedJPEG(on: configuration, root: root)
        let second = try Self.cacheJPEG(at: "second.jpg", in: pipeline)
        // The first fetch's decode memory is given back once its delegate has the image: with the delegate queue
        // held, the first fetch keeps it.
        let delegateQueueHeld = DispatchSemaphore(value: 0)
        configuration.delegateQueue.async { delegateQueueHeld.wait() }
        let outcomes = Locked<[URL: Result<FetchResult, FetchError>]>([:])
        func fetch(_ url: URL) -> FetchOperation {
            let operation = pipeline.operation(with: GenericFetchRequest(url: url, loadingSources: [.memoryCache])) { result in
                outcomes.withLock { $0[url] = result }
            }
            pipeline.fetchImage(with: operation)
            return operation
        }
        let holder = fetch(first)
        #expect(try await eventually { configuration.totalBytesForDecodesInFlight > 0 })
        // Room for that decode only.
        configuration.maxBytesForDecodesInFlight = configuration.totalBytesForDecodesInFlight
        let waiter = fetch(second)
        #expect(try await eventually { configuration.decodeMemoryBudget.waitingCount == 1 })
        // The target's one thread is free while the second fetch waits (waiting on it, it would be held for the
        // budget's whole wait of 30 seconds).
        let targetRan = Locked(false)
        target.async { targetRan.withLock { $0 = true } }
        #expect(try await eventually(timeout: .seconds(5)) { targetRan.withLock { $0 } })
        #expect(waiter.state != .succeeded)

        delegateQueueHeld.signal()
        #expect(try await eventually { [holder, waiter].allSatisfy(\.isFinished) })
        for url in [first, second] {
            let result = try #require(outcomes.withLock { $0[url] }).get()
            #expect(result.image.dimensions == PixelSize(width: 40, height: 30))
        }
        #expect(try await eventually { configuration.totalBytesForDecodesInFlight == 0 })
        #expect(configuration.decodeMemoryBudget.waitingCount == 0)
    }
}
