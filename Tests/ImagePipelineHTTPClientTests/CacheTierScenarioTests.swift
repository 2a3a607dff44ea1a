import Foundation
import ImageOriginServer
import ImagePipelineKit
import Testing
import TestSupport

/// Which cache tier answers a repeated fetch, and when: TIP's scenarios 5 to 9 (the memory and disk caches
/// behind the rendered cache, and when a rendered hit completes synchronously) and 39 and 40 (time to live).
/// `/a.jpg` is the rocket, 640×427, so a 100×100 fit target gives 100×67 where TIP's 1000×800 image gives 100×80.
@Suite("Cache tiers: memory and disk behind the rendered cache, synchronous hits, expiry (scenarios 5-9, 39, 40)", .serialized)
struct CacheTierScenarioTests {
    static let target = PixelSize(width: 100, height: 100)
    /// The rocket fitted into 100×100 (640×427 scaled by 100/640, rounded).
    static let fitted = PixelSize(width: 100, height: 67)

    /// Scenario 6's first step, which scenarios 7 to 9 start from: a 100×100 fit fetch answered by the network.
    static func fetchAtTarget(_ h: FetchHarness) async -> FetchOperation {
        let (delegate, operation) = await h.fetch(h.request(target: target))
        #expect(delegate.events.last == .final(.network))
        return operation
    }

    /// Runs `request` from the delegate queue: the operation, its delegate, and what the delegate had heard when
    /// `fetchImage(with:)` returned.
    static func fetchOnDelegateQueue(_ request: any FetchRequest, _ h: FetchHarness)
        -> (operation: FetchOperation, delegate: RecordingFetchDelegate, eventsAtReturn: [RecordingFetchDelegate.Event]) {
        let delegate = RecordingFetchDelegate()
        let (operation, events) = h.onDelegateQueue { () -> (FetchOperation, [RecordingFetchDelegate.Event]) in
            let operation = h.pipeline.operation(with: request, delegate: delegate)
            h.pipeline.fetchImage(with: operation)
            return (operation, delegate.events)
        }
        return (operation, delegate, events)
    }

    /// Whether a fetch that did not complete synchronously finishes from the memory cache.
    static func finishesFromMemory(_ delegate: RecordingFetchDelegate, _ operation: FetchOperation) async throws -> Bool {
        let source = try await delegate.finished().get().source
        return try await eventually { operation.isFinished } && source == .memoryCache
    }

    @Test("Scenario 5: after a cold fetch, clearing only the rendered cache makes the same fetch come from memory: one attempt, no request",
          arguments: CoordinatorDownloader.allCases)
    func memoryAfterRenderedCleared(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let (cold, _) = await h.fetch(h.request())
            #expect(cold.events.last == .final(.network))
            h.pipeline.renderedCache.clearAll()
            let (again, operation) = await h.fetch(h.request())
            #expect(again.attempts == [.memoryCache])
            #expect(again.events.last == .final(.memoryCache) && operation.finalResult?.image.dimensions == h.imageSize)
            #expect(h.server.requestLog.count == 1)
        }
    }

    @Test("Scenario 6: a 100x100 fit fetch yields the fitted size; its repeat on the delegate queue completes before fetchImage returns, from memory, with no attempt, marked synchronous",
          arguments: CoordinatorDownloader.allCases)
    func synchronousRepeat(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let first = await Self.fetchAtTarget(h)
            #expect(first.finalResult?.image.dimensions == Self.fitted)
            let (operation, delegate, eventsAtReturn) = Self.fetchOnDelegateQueue(h.request(target: Self.target), h)
            #expect(eventsAtReturn == [.start, .final(.memoryCache)] && operation.isFinished)
            #expect(delegate.attempts.isEmpty)
            #expect(operation.finalResult?.source == .memoryCache && operation.finalResult?.image.dimensions == Self.fitted)
            #expect(operation.metrics?.info(for: .memoryCache)?.wasLoadedSynchronously == true)
            #expect(h.server.requestLog.count == 1)
        }
    }

    @Test("Scenario 7: the same repeat started off the delegate queue is asynchronous, answered by memory after one memory attempt",
          arguments: CoordinatorDownloader.allCases)
    func asynchronousRepeat(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            _ = await Self.fetchAtTarget(h)
            let delegate = RecordingFetchDelegate()
            let operation = h.pipeline.operation(with: h.request(target: Self.target), delegate: delegate)
            // The delegate queue is held while fetchImage runs here, off it: an asynchronous fetch can then neither
            // reach its delegate nor report finished before fetchImage returns, however fast it runs. A synchronous
            // one would have done both in place.
            h.configuration.delegateQueue.suspend()
            h.pipeline.fetchImage(with: operation)
            let (eventsAtReturn, finishedAtReturn) = (delegate.events, operation.isFinished)
            h.configuration.delegateQueue.resume()
            #expect(eventsAtReturn.isEmpty && !finishedAtReturn)
            #expect(try await Self.finishesFromMemory(delegate, operation))
            #expect(delegate.attempts == [.memoryCache])
            #expect(operation.metrics?.info(for: .memoryCache)?.wasLoadedSynchronously == false)
            #expect(h.server.requestLog.count == 1)
        }
    }

    @Test("Scenario 8: the same repeat with the center content mode never completes synchronously",
          arguments: CoordinatorDownloader.allCases)
    func centerNeverSynchronous(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            _ = await Self.fetchAtTarget(h)
            let centered = h.request(target: Self.target, mode: .center)
            // Twice: the second time after a center fetch of the image has completed and kept what it could.
            for _ in 0..<2 {
                let (operation, delegate, eventsAtReturn) = Self.fetchOnDelegateQueue(centered, h)
                #expect(eventsAtReturn.isEmpty && !operation.isFinished)
                #expect(try await Self.finishesFromMemory(delegate, operation))
            }
            #expect(h.server.requestLog.count == 1)
        }
    }

    @Test("Scenario 9: after the fitted fetch, clearing the rendered and memory caches makes it come from disk, after attempting memory then disk",
          arguments: CoordinatorDownloader.allCases)
    func diskAfterMemoryCleared(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            _ = await Self.fetchAtTarget(h)
            h.pipeline.clearMemoryCaches()
            #expect(h.pipeline.renderedCache.entries.isEmpty && h.pipeline.memoryCache.entries.isEmpty)
            let (fromDisk, operation) = await h.fetch(h.request(target: Self.target))
            #expect(fromDisk.attempts == [.memoryCache, .diskCache])
            #expect(fromDisk.events.last == .final(.diskCache) && operation.finalResult?.image.dimensions == Self.fitted)
            #expect(h.server.requestLog.count == 1)
            // Percolation: the disk hit put the bytes back into memory.
            #expect(isSameBytes(h.pipeline.memoryCache.entry(for: "I")?.complete?.data, h.image))
        }
    }

    @Test("Scenario 39: with a time to live of 1 s, a fetch 2 s later goes to the network; the expired memory and disk entries are removed",
          arguments: CoordinatorDownloader.allCases)
    func expiredEntriesGo(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            // A second image, J, whose origin is gone by the time it expires: its fetch stores nothing new, so what
            // the caches hold afterwards shows whether the expired entries were removed or only passed over.
            h.server.setAsset(h.image, at: "/j.jpg", contentType: "image/jpeg")
            var a = h.request()
            a.timeToLive = 1
            var j = h.request("/j.jpg", identifier: "J")
            j.timeToLive = 1
            _ = await h.fetch(a)
            _ = await h.fetch(j)
            #expect(Set(h.pipeline.memoryCache.entries.map(\.identifier)) == ["I", "J"])
            #expect(Set(h.pipeline.diskCache?.entries.map(\.identifier) ?? []) == ["I", "J"])
            try await Task.sleep(for: .seconds(2))

            h.pipeline.renderedCache.clearAll()
            let (again, operation) = await h.fetch(a)
            #expect(again.attempts == [.memoryCache, .diskCache, .additionalCache, .network])
            #expect(again.events.last == .final(.network) && operation.finalResult?.image.dimensions == h.imageSize)
            #expect(h.server.requests(to: "/a.jpg").count == 2)

            h.server.removeAsset(at: "/j.jpg")
            let (gone, goneOperation) = await h.fetch(j)
            #expect(gone.attempts == [.memoryCache, .diskCache, .additionalCache, .network])
            #expect(goneOperation.error?.httpStatusCode == 404)
            #expect(!h.pipeline.memoryCache.entries.contains { $0.identifier == "J" })
            #expect(h.pipeline.diskCache?.entries.contains { $0.identifier == "J" } == false)
        }
    }

    @Test("Scenario 40: with the do-not-reset-expiry option an access before expiry does not extend the time to live, and a fetch after it goes to the network; without the option memory answers",
          arguments: CoordinatorDownloader.allCases)
    func accessAndExpiry(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            // TIP's 10 s time to live, access at 6 s and fetch at 11 s, halved. Both identifiers are fetched from
            // /a.jpg; "fixed" asks for the option, "sliding" does not.
            func request(_ identifier: String, _ options: FetchOptions) -> GenericFetchRequest {
                var request = h.request(identifier: identifier, options: options)
                request.timeToLive = 5
                return request
            }
            let fixed = request("fixed", [.doNotResetExpiryOnAccess]), sliding = request("sliding", [])
            _ = await h.fetch(fixed)
            // The times below count from the first store, not from whenever the fetches between happen to end: a
            // loaded machine that takes seconds over them must not push the access past the expiry.
            let stored = ContinuousClock.now
            _ = await h.fetch(sliding)
            #expect(h.server.requestLog.count == 2)
            try await Task.sleep(until: stored + .seconds(3), clock: .continuous)

            h.pipeline.renderedCache.clearAll()
            let (fixedAccess, _) = await h.fetch(fixed)
            let (slidingAccess, _) = await h.fetch(sliding)
            #expect(fixedAccess.events.last == .final(.memoryCache) && slidingAccess.events.last == .final(.memoryCache))
            try await Task.sleep(until: stored + .seconds(5.5), clock: .continuous)

            h.pipeline.renderedCache.clearAll()
            let (fixedLater, _) = await h.fetch(fixed)
            #expect(fixedLater.attempts == [.memoryCache, .diskCache, .additionalCache, .network])
            #expect(fixedLater.events.last == .final(.network))
            let (slidingLater, _) = await h.fetch(sliding)
            #expect(slidingLater.attempts == [.memoryCache] && slidingLater.events.last == .final(.memoryCache))
            #expect(h.server.requestLog.count == 3)
        }
    }
}
