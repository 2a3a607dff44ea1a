import Foundation
import ImagePipelineKit
import PipelineLocking
import Testing
import TestSupport

/// Records, at its final callback, whether the operation queue had started the fetch yet.
private final class StartNotingDelegate: FetchDelegate {
    let notes = Locked<[(source: ImageLoadSource, hadStarted: Bool)]>([])

    func fetchOperation(_ operation: FetchOperation, didLoadFinalImage result: FetchResult) {
        notes.withLock { $0.append((result.source, operation.timeSpentIdleInQueue != nil)) }
    }
}

@Suite("Fetches waiting in the operation queue: many fetches of one image, one download and one decode", .serialized)
struct WaitingFetchesTests {
    @Test("A rendition made by one fetch answers the fetches of it still waiting in the operation queue before they start; they finish once started",
          arguments: [false, true])
    func answeredWhileWaiting(onSharedPool: Bool) async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            // One slot: the first fetch runs, the others wait behind it until it reports finished.
            h.configuration.operationQueue.maxConcurrentOperationCount = 1
            defer { h.configuration.operationQueue.maxConcurrentOperationCount = OperationQueue.defaultMaxConcurrentOperationCount }
            // On a fetch queue target the answers are blocks of the waiting fetches' queues: one the operation
            // queue starts before its answer ran follows the answer, and is answered just the same.
            h.configuration.fetchQueueTarget = onSharedPool ? .global(qos: .utility) : nil
            let request = h.request(target: PixelSize(width: 100, height: 100))
            let first = RecordingFetchDelegate()
            let waiting = StartNotingDelegate()
            let operations = h.onDelegateQueue { () -> [FetchOperation] in
                let owner = h.pipeline.operation(with: request, delegate: first)
                h.pipeline.fetchImage(with: owner)
                let others = (0..<5).map { _ in h.pipeline.operation(with: request, delegate: waiting) }
                others.forEach(h.pipeline.fetchImage(with:))
                return [owner] + others
            }
            #expect(try await eventually { operations.allSatisfy(\.isFinished) })
            #expect(try await first.finished().get().source == .network)
            let notes = waiting.notes.withLock { $0 }
            #expect(notes.count == 5)
            #expect(notes.allSatisfy { $0.source == .memoryCache && (onSharedPool || !$0.hadStarted) })
            #expect(operations.dropFirst().allSatisfy { $0.state == .succeeded && $0.metrics?.info(for: .memoryCache)?.result == .hitFinal })
            #expect(try await eventually { h.configuration.operationQueue.operationCount == 0 })
            #expect(h.server.requestLog.count == 1)
        }
    }
}
