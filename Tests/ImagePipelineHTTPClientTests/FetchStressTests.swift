import Foundation
import ImageOriginServer
import ImagePipelineKit
import Synchronization
import Testing
import TestSupport

/// A delegate that only counts its final callbacks.
final class CountingDelegate: FetchDelegate {
    let finals = Atomic<Int>(0)
    func fetchOperation(_ operation: FetchOperation, didLoadFinalImage result: FetchResult) { finals.add(1, ordering: .relaxed) }
    func fetchOperation(_ operation: FetchOperation, didFailToLoadFinalImageWith error: FetchError) { finals.add(1, ordering: .relaxed) }
}

/// A stress run of many concurrent fetches. `make stress-tsan` runs it under ThreadSanitizer (a debug build
/// with TSan is too slow for every CI run); `make test` runs it in release.
@Suite("Stress: 2,000 fetches over 200 URLs with random priorities, cancels and released delegates", .serialized)
struct FetchStressTests {
    static let fetchCount = 2_000
    static let urlCount = 200

    @Test("Every operation finishes, none leaks, no download is left, and the cache totals stay within the limits",
          arguments: CoordinatorDownloader.allCases)
    func stress(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            // 200 distinct small JPEGs, made by our encoder.
            for index in 0..<Self.urlCount {
                let bitmap = try Bitmap(width: 48, height: 32) { pixels, stride in
                    memset(pixels, Int32(index % 251), stride * 32)
                }
                let jpeg = try CodecCatalogue.shared.encode(ImageContainer(bitmap: bitmap), as: .jpeg)
                h.server.setAsset(jpeg, at: "/s/\(index).jpg", contentType: "image/jpeg")
            }
            // Limits small enough that pruning runs all the time.
            h.configuration.maxBytesForAllRenderedCaches = 64 << 10
            h.configuration.maxBytesForAllMemoryCaches = 48 << 10
            h.configuration.maxBytesForAllDiskCaches = 96 << 10

            var generator = SystemRandomNumberGenerator()
            let priorities: [Operation.QueuePriority] = [.veryLow, .low, .normal, .high, .veryHigh]
            var kept: [CountingDelegate] = []
            var weakOperations: [WeakBox<FetchOperation>] = []
            var operations: [FetchOperation] = []
            for index in 0..<Self.fetchCount {
                let path = "/s/\(Int.random(in: 0..<Self.urlCount, using: &generator)).jpg"
                let target: PixelSize? = Bool.random(using: &generator) ? PixelSize(width: 16, height: 16) : nil
                let request = h.request(path, identifier: nil, target: target)
                var delegate: CountingDelegate? = CountingDelegate()
                let operation = h.pipeline.operation(with: request, delegate: delegate)
                operation.priority = priorities.randomElement(using: &generator)!
                h.pipeline.fetchImage(with: operation)
                switch index % 10 {
                case 0, 1: operation.cancel()                                            // 20% cancelled at once
                case 2: DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int.random(in: 0...20))) {
                    operation.cancel()                                                   // 10% cancelled a little later
                }
                case 3: delegate = nil                                                   // 10% lose their delegate
                case 4: operation.priority = priorities.randomElement(using: &generator)! // 10% change priority while queued or running
                default: break
                }
                if let delegate { kept.append(delegate) }
                weakOperations.append(WeakBox(operation))
                operations.append(operation)
            }

            #expect(try await eventually(timeout: .seconds(180)) { operations.allSatisfy(\.isFinished) },
                    "\(operations.filter { !$0.isFinished }.count) operations never finished")
            for operation in operations {
                #expect(operation.state.isFinished)
                if operation.state == .failed {
                    Issue.record("a fetch failed: \(String(describing: operation.error))")
                }
            }
            // Every kept delegate heard exactly one final callback.
            #expect(try await eventually { kept.allSatisfy { $0.finals.load(ordering: .relaxed) == 1 } })
            #expect(try await eventually { h.configuration.downloadCoordinator.activeDownloadCount == 0 })
            #expect(h.configuration.totalBytesForAllRenderedCaches <= 64 << 10)
            #expect(h.configuration.totalBytesForAllMemoryCaches <= 48 << 10)
            #expect(h.configuration.totalBytesForAllDiskCaches <= 96 << 10)
            let succeeded = operations.filter { $0.state == .succeeded }.count
            #expect(succeeded >= Self.fetchCount / 2, "only \(succeeded) fetches succeeded")
            // The network really was in play: most URLs were downloaded (the rest came from the caches).
            let sources = Dictionary(grouping: operations.compactMap { $0.finalResult?.source }, by: { $0 }).mapValues(\.count)
            #expect(h.server.requestLog.count >= Self.urlCount / 2, "\(h.server.requestLog.count) requests; sources \(sources)")
            #expect((sources[.network] ?? 0) > 0 && (sources[.memoryCache] ?? 0) > 0, "\(sources)")
            operations = []
            // Nothing keeps a finished operation alive: not the queue, the coordinator or a download.
            #expect(try await eventually { weakOperations.allSatisfy { $0.value == nil } },
                    "\(weakOperations.filter { $0.value != nil }.count) operations still alive")
        }
    }
}

/// A weak reference, to see whether anything still holds an object.
final class WeakBox<T: AnyObject>: @unchecked Sendable {
    weak var value: T?
    init(_ value: T) { self.value = value }
}
