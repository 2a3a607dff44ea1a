import Foundation
import ImageOriginServer
import ImagePipelineKit
import MetricsTestKit
import Testing
import TestSupport

/// The HTTP freshness policy against the loopback origin: a stale disk image with a validator costs a
/// conditional request, a `304` serves the bytes on disk, a changed image replaces them, `no-store` stays off
/// disk, and TIP's time to live stays the default. Each repeat clears the in-memory caches first, so that the
/// disk cache is the tier that answers (the rendered and memory caches answer without asking in either policy).
@Suite("HTTP revalidation: 304s, changed images, no-store, and the TTL default", .serialized)
struct HTTPRevalidationTests {
    /// A different image for `/a.jpg` once it "changed": the camera photo, 512×512, smaller than the rocket, so
    /// TIP's size rule alone would have kept the old bytes.
    static let changedImageURL = CoordinatorHarness.imageURL.deletingLastPathComponent().appendingPathComponent("skimage-camera.png")

    /// Serves the rocket at `/a.jpg` with `cacheControl`, turns the pipeline's HTTP policy on, and fetches it
    /// once from the network.
    static func primed(_ h: FetchHarness, cacheControl: String?) async {
        h.server.setAsset(h.image, at: "/a.jpg", contentType: "image/jpeg", cacheControl: cacheControl)
        h.pipeline.freshnessPolicy = .http
        let (cold, _) = await h.fetch(h.request())
        #expect(cold.events.last == .final(.network))
    }

    /// The same fetch again, with the rendered and memory caches emptied first.
    static func fetchFromDisk(_ h: FetchHarness) async -> (RecordingFetchDelegate, FetchOperation) {
        h.pipeline.clearMemoryCaches()
        return await h.fetch(h.request())
    }

    @Test("A stale image with an ETag is revalidated: the origin answers 304 with no body, the bytes on disk are served as diskRevalidated, and the bytes saved are counted",
          arguments: CoordinatorDownloader.allCases)
    func notModified(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let recorded = TestMetrics()
            h.configuration.metricsFactory = recorded
            await Self.primed(h, cacheControl: "no-cache")
            let firstMetadata = try #require(h.pipeline.diskCache?.entry(for: "I")?.complete?.httpMetadata)
            #expect(firstMetadata.entityTag == h.server.etag(at: "/a.jpg") && firstMetadata.cacheControl == "no-cache")

            let (delegate, operation) = await Self.fetchFromDisk(h)
            #expect(delegate.attempts == [.memoryCache, .diskCache, .diskRevalidated])
            #expect(delegate.events.last == .final(.diskRevalidated))
            #expect(operation.finalResult?.source == .diskRevalidated && operation.finalResult?.image.dimensions == h.imageSize)
            try await h.server.waitForCompletedRequests(count: 2)
            let conditional = try #require(h.server.requests(to: "/a.jpg").last)
            #expect(conditional.header("If-None-Match") == h.server.etag(at: "/a.jpg"))
            #expect(conditional.header("If-Modified-Since") == HTTPDate.format(ImageOriginServer.defaultLastModified))
            #expect(conditional.status == 304 && conditional.bytesSent == 0)
            #expect(operation.metrics?.info(for: .diskRevalidated)?.revalidationBytesSaved == h.image.count)
            #expect(operation.metrics?.info(for: .diskRevalidated)?.result == .hitFinal)
            let p = h.pipeline.identifier
            #expect(try recorded.expectCounter(PipelineMetricLabels.revalidationBytesSaved, [("pipeline", p)]).totalValue
                    == Int64(h.image.count))
            #expect(try recorded.expectCounter(PipelineMetricLabels.fetches,
                                               [("pipeline", p), ("result", "success"), ("source", "diskRevalidated")]).totalValue == 1)
            // The entry is the same bytes, its metadata refreshed by the 304.
            let entry = try #require(h.pipeline.diskCache?.entry(for: "I")?.complete)
            #expect(isSameBytes(entry.data, h.image))
            #expect(try #require(entry.httpMetadata).receivedAt > firstMetadata.receivedAt)
        }
    }

    @Test("A changed image (new ETag) answers the revalidation with a full 200: the entry is replaced and the new pixels are delivered; the next revalidation of it gets a 304",
          arguments: CoordinatorDownloader.allCases)
    func changedETag(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            await Self.primed(h, cacheControl: "no-cache")
            let oldTag = h.server.etag(at: "/a.jpg")
            let changed = try Data(contentsOf: Self.changedImageURL)
            h.server.setAsset(changed, at: "/a.jpg", contentType: "image/png", cacheControl: "no-cache")
            let newTag = h.server.etag(at: "/a.jpg")
            #expect(newTag != oldTag)

            let (delegate, operation) = await Self.fetchFromDisk(h)
            #expect(delegate.events.last == .final(.network))
            #expect(operation.finalResult?.originalDimensions == PixelSize(width: 512, height: 512))
            try await h.server.waitForCompletedRequests(count: 2)
            let second = try #require(h.server.requests(to: "/a.jpg").last)
            #expect(second.header("If-None-Match") == oldTag && second.status == 200 && second.bytesSent == changed.count)
            let entry = try #require(h.pipeline.diskCache?.entry(for: "I")?.complete)
            #expect(isSameBytes(entry.data, changed) && entry.httpMetadata?.entityTag == newTag)

            let (again, repeated) = await Self.fetchFromDisk(h)
            #expect(again.events.last == .final(.diskRevalidated))
            #expect(repeated.finalResult?.originalDimensions == PixelSize(width: 512, height: 512))
            try await h.server.waitForCompletedRequests(count: 3)
            #expect(h.server.requests(to: "/a.jpg").last?.header("If-None-Match") == newTag)
            #expect(h.server.requests(to: "/a.jpg").last?.status == 304)
        }
    }

    @Test("A no-store response is delivered but never written to disk, and the next fetch downloads it again unconditionally",
          arguments: CoordinatorDownloader.allCases)
    func noStore(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            await Self.primed(h, cacheControl: "private, no-store")
            // The fetch's disk step ran after its delegate heard of the image: wait for the operation to finish.
            #expect(h.pipeline.diskCache?.entry(for: "I") == nil && h.pipeline.diskCache?.totalCount == 0)
            let (delegate, _) = await Self.fetchFromDisk(h)
            #expect(delegate.events.last == .final(.network))
            try await h.server.waitForCompletedRequests(count: 2)
            let second = try #require(h.server.requests(to: "/a.jpg").last)
            #expect(second.header("If-None-Match") == nil && second.status == 200)
            #expect(h.pipeline.diskCache?.totalCount == 0)
        }
    }

    @Test("max-age=0 with a validator revalidates on every fetch: each repeat sends If-None-Match and gets a 304",
          arguments: CoordinatorDownloader.allCases)
    func maxAgeZeroRevalidatesEveryTime(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            await Self.primed(h, cacheControl: "max-age=0")
            for _ in 0..<3 {
                let (delegate, _) = await Self.fetchFromDisk(h)
                #expect(delegate.events.last == .final(.diskRevalidated))
            }
            try await h.server.waitForCompletedRequests(count: 4)
            let log = h.server.requests(to: "/a.jpg")
            #expect(log.map(\.status) == [200, 304, 304, 304])
            #expect(log.dropFirst().allSatisfy { $0.header("If-None-Match") == h.server.etag(at: "/a.jpg") && $0.bytesSent == 0 })
        }
    }

    @Test("A 304 refreshes the entry's metadata: when it brings a longer max-age, the next fetch uses the disk image without a request",
          arguments: CoordinatorDownloader.allCases)
    func notModifiedRefreshesFreshness(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            await Self.primed(h, cacheControl: "max-age=0")
            // Same bytes, same ETag: only the caching advice changes, and the 304 carries it.
            h.server.setAsset(h.image, at: "/a.jpg", contentType: "image/jpeg", cacheControl: "max-age=3600")
            let (revalidated, _) = await Self.fetchFromDisk(h)
            #expect(revalidated.events.last == .final(.diskRevalidated))
            #expect(h.pipeline.diskCache?.entry(for: "I")?.complete?.httpMetadata?.cacheControl == "max-age=3600")
            let (fresh, _) = await Self.fetchFromDisk(h)
            #expect(fresh.events.last == .final(.diskCache))
            try await h.server.waitForCompletedRequests(count: 2)
            #expect(h.server.requests(to: "/a.jpg").map(\.status) == [200, 304])
        }
    }

    @Test("A stale image without a validator is downloaded again with a plain request, and the download replaces it",
          arguments: CoordinatorDownloader.allCases)
    func staleWithoutValidator(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            h.server.setFaults([.noValidators], for: "/a.jpg")
            await Self.primed(h, cacheControl: "max-age=0")
            let first = try #require(h.pipeline.diskCache?.entry(for: "I")?.complete?.httpMetadata)
            #expect(!first.hasValidator)
            let (delegate, _) = await Self.fetchFromDisk(h)
            #expect(delegate.attempts == [.memoryCache, .diskCache, .additionalCache, .network])
            #expect(delegate.events.last == .final(.network))
            try await h.server.waitForCompletedRequests(count: 2)
            let second = try #require(h.server.requests(to: "/a.jpg").last)
            #expect(second.header("If-None-Match") == nil && second.header("If-Modified-Since") == nil && second.status == 200)
            let replaced = try #require(h.pipeline.diskCache?.entry(for: "I")?.complete?.httpMetadata)
            #expect(replaced.receivedAt > first.receivedAt)
        }
    }

    @Test("A no-store download cut short leaves no partial to resume, on disk or in memory",
          arguments: CoordinatorDownloader.allCases)
    func noStorePartialNotKept(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            h.pipeline.freshnessPolicy = .http
            h.server.setAsset(h.image, at: "/a.jpg", contentType: "image/jpeg", cacheControl: "no-store")
            let (delegate, _) = try await h.cancelHalfway()
            #expect(delegate.events.last == .failure(.cancelled))
            #expect(h.pipeline.diskCache?.entry(for: "I") == nil)
            #expect(h.pipeline.memoryCache.entry(for: "I") == nil)
        }
    }

    @Test("Another pipeline's stale disk image is not copied in under the HTTP policy: the fetch downloads it; a fresh one is copied without a request",
          arguments: CoordinatorDownloader.allCases)
    func otherPipelinesCopyOnlyFresh(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            await Self.primed(h, cacheControl: "no-cache")
            let stale = try ImagePipeline(identifier: h.pipeline.identifier + "-2", configuration: h.configuration, cacheRoot: h.root)
            stale.freshnessPolicy = .http
            let (downloaded, _) = await h.fetch(h.request(), in: stale)
            #expect(downloaded.events.last == .final(.network))
            #expect(h.server.requests(to: "/a.jpg").count == 2)

            h.server.setAsset(h.image, at: "/b.jpg", contentType: "image/jpeg", cacheControl: "max-age=3600")
            _ = await h.fetch(h.request("/b.jpg", identifier: "B"))
            let fresh = try ImagePipeline(identifier: h.pipeline.identifier + "-3", configuration: h.configuration, cacheRoot: h.root)
            fresh.freshnessPolicy = .http
            let (copied, _) = await h.fetch(h.request("/b.jpg", identifier: "B"), in: fresh)
            #expect(copied.events.last == .final(.diskCache))
            #expect(h.server.requests(to: "/b.jpg").count == 1)
        }
    }

    @Test("A server that ignores validators answers every revalidation with the whole image: each is delivered from the network and replaces the entry",
          arguments: CoordinatorDownloader.allCases)
    func serverIgnoresValidators(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            h.server.setFaults([.ignoreValidators], for: "/a.jpg")
            await Self.primed(h, cacheControl: "max-age=0")
            var received = try #require(h.pipeline.diskCache?.entry(for: "I")?.complete?.httpMetadata?.receivedAt)
            for _ in 0..<2 {
                let (delegate, operation) = await Self.fetchFromDisk(h)
                #expect(delegate.attempts.last == .diskRevalidated)
                #expect(delegate.events.last == .final(.network) && operation.finalResult?.image.dimensions == h.imageSize)
                #expect(operation.metrics?.info(for: .network)?.result == .hitFinal)
                let entry = try #require(h.pipeline.diskCache?.entry(for: "I")?.complete)
                #expect(isSameBytes(entry.data, h.image))
                let replacedAt = try #require(entry.httpMetadata?.receivedAt)
                #expect(replacedAt > received)
                received = replacedAt
            }
            try await h.server.waitForCompletedRequests(count: 3)
            let log = h.server.requests(to: "/a.jpg")
            #expect(log.map(\.status) == [200, 200, 200])
            #expect(log.dropFirst().allSatisfy { $0.header("If-None-Match") != nil && $0.bytesSent == h.image.count })
        }
    }

    @Test("A fresh image (max-age in the future) is served from disk under the HTTP policy without a request",
          arguments: CoordinatorDownloader.allCases)
    func freshImageNeedsNoRequest(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            await Self.primed(h, cacheControl: "max-age=3600, immutable")
            let (delegate, _) = await Self.fetchFromDisk(h)
            #expect(delegate.events.last == .final(.diskCache))
            #expect(h.server.requests(to: "/a.jpg").count == 1)
        }
    }

    @Test("TIP's time to live stays the default: no-cache and no-store are kept but not acted on, and the repeat comes from disk without a request",
          arguments: CoordinatorDownloader.allCases)
    func timeToLiveIsTheDefault(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            #expect(h.pipeline.freshnessPolicy == .timeToLive)
            h.server.setAsset(h.image, at: "/a.jpg", contentType: "image/jpeg", cacheControl: "no-store, no-cache, max-age=0")
            let (cold, _) = await h.fetch(h.request())
            #expect(cold.events.last == .final(.network))
            let entry = try #require(h.pipeline.diskCache?.entry(for: "I")?.complete)
            #expect(entry.httpMetadata?.cacheControl == "no-store, no-cache, max-age=0")
            let (delegate, _) = await Self.fetchFromDisk(h)
            #expect(delegate.attempts == [.memoryCache, .diskCache])
            #expect(delegate.events.last == .final(.diskCache))
            #expect(h.server.requests(to: "/a.jpg").count == 1)
        }
    }
}
