import Foundation
import ImageOriginServer
import ImagePipelineKit
import MetricsTestKit
import Testing
import TestSupport

@Suite("FetchMetrics, source by source, and swift-metrics", .serialized)
struct FetchMetricsTests {
    @Test("Scenario 4's metrics: three misses then a network hit with the image's bytes, type, size and pixels per byte; counters follow",
          arguments: CoordinatorDownloader.allCases)
    func coldThenMemoryThenRendered(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let recorded = TestMetrics()
            h.configuration.metricsFactory = recorded
            let p = h.pipeline.identifier
            let (_, cold) = await h.fetch(h.request())
            let metrics = try #require(cold.metrics)
            #expect(metrics.sources.map(\.source) == [.memoryCache, .diskCache, .additionalCache, .network])
            #expect(metrics.sources.map(\.result) == [.miss, .miss, .miss, .hitFinal])
            let network = try #require(metrics.info(for: .network))
            #expect(network.networkImageSizeInBytes == h.image.count && network.networkImageType == .jpeg)
            #expect(network.networkImageDimensions == h.imageSize)
            let pixelsPerByte = Double(h.imageSize.width * h.imageSize.height) / Double(h.image.count)
            #expect(abs((network.networkImagePixelsPerByte ?? 0) - pixelsPerByte) < 1e-9)
            #expect(metrics.totalDuration > 0 && !metrics.wasCancelled)
            #expect(metrics.firstImageLoadDuration.map { $0 > 0 && $0 <= metrics.totalDuration } == true)

            #expect(try recorded.expectCounter(PipelineMetricLabels.fetches,
                                               [("pipeline", p), ("result", "success"), ("source", "network")]).totalValue == 1)
            #expect(try recorded.expectCounter(PipelineMetricLabels.cacheLookups,
                                               [("pipeline", p), ("layer", "memory"), ("result", "miss")]).totalValue == 1)
            #expect(try recorded.expectCounter(PipelineMetricLabels.networkBytes, [("pipeline", p)]).totalValue == Int64(h.image.count))
            #expect(try recorded.expectTimer(PipelineMetricLabels.decodeDuration, [("format", "\(ImageType.jpeg)")]).values.count >= 1)

            // From memory at a target, then the same on the delegate queue: synchronous, from the rendered cache.
            let small = h.request(target: PixelSize(width: 64, height: 64))
            let (_, fromMemory) = await h.fetch(small)
            #expect(fromMemory.metrics?.info(for: .memoryCache)?.result == .hitFinal)
            #expect(fromMemory.metrics?.info(for: .memoryCache)?.wasLoadedSynchronously == false)
            let synchronous = h.onDelegateQueue { () -> FetchOperation in
                let operation = h.pipeline.operation(with: small, delegate: nil)
                h.pipeline.fetchImage(with: operation)
                return operation
            }
            #expect(synchronous.isFinished && synchronous.metrics?.info(for: .memoryCache)?.wasLoadedSynchronously == true)
            #expect(try recorded.expectCounter(PipelineMetricLabels.cacheLookups,
                                               [("pipeline", p), ("layer", "memory"), ("result", "hit")]).totalValue == 1)
            #expect(try recorded.expectCounter(PipelineMetricLabels.cacheLookups,
                                               [("pipeline", p), ("layer", "rendered"), ("result", "hit")]).totalValue == 1)
            #expect(try recorded.expectCounter(PipelineMetricLabels.fetches,
                                               [("pipeline", p), ("result", "success"), ("source", "memory")]).totalValue == 2)
            #expect(try recorded.expectTimer(PipelineMetricLabels.fetchDuration, [("pipeline", p), ("result", "success")]).values.count == 3)
        }
    }

    @Test("Coalescing: twenty fetches of one URL started at once make one request and one decode, and every one gets the image",
          arguments: CoordinatorDownloader.allCases)
    func coalescedFetchesDecodeOnce(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let recorded = TestMetrics()
            h.configuration.metricsFactory = recorded
            // A larger photo than the harness's: its decode takes long enough that the fetches sharing the
            // download all ask for it while it runs.
            let photo = try Data(contentsOf: CoordinatorHarness.imageURL.deletingLastPathComponent()
                .appendingPathComponent("skimage-hubble_deep_field.jpg"))
            h.server.setAsset(photo, at: "/big.jpg", contentType: "image/jpeg")
            let request = h.request("/big.jpg", identifier: nil, target: PixelSize(width: 256, height: 256))
            let delegates = (0..<20).map { _ in RecordingFetchDelegate() }
            h.onDelegateQueue {
                for delegate in delegates { h.pipeline.fetchImage(with: h.pipeline.operation(with: request, delegate: delegate)) }
            }
            var images: [ImageContainer] = []
            for delegate in delegates { images.append(try await delegate.finished().get().image) }
            #expect(h.server.requestLog.count == 1)
            #expect(try recorded.expectTimer(PipelineMetricLabels.decodeDuration, [("format", "\(ImageType.jpeg)")]).values.count == 1)
            // One decode: every fetch holds the very same pixels.
            #expect(Set(images.map { ObjectIdentifier($0.frames[0].bitmap) }).count == 1)
            #expect(max(images[0].dimensions.width, images[0].dimensions.height) == 256)
        }
    }

    @Test("A failed fetch counts as a failure with no source; its network attempt never completed", arguments: [CoordinatorDownloader.httpClient])
    func failure(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let recorded = TestMetrics()
            h.configuration.metricsFactory = recorded
            let (_, operation) = await h.fetch(h.request("/missing.jpg", identifier: "missing"))
            #expect(operation.state == .failed)
            #expect(operation.metrics?.info(for: .network)?.result == .neverCompleted)
            #expect(operation.metrics?.firstImageLoadDuration == nil && operation.metrics?.wasCancelled == false)
            #expect(try recorded.expectCounter(PipelineMetricLabels.fetches,
                                               [("pipeline", h.pipeline.identifier), ("result", "failure"), ("source", "none")]).totalValue == 1)
        }
    }

    @Test("Downloads' time to first byte and duration; gauges of the caches, downloads and decodes, recorded on demand and on an interval",
          arguments: [CoordinatorDownloader.httpClient])
    func downloadTimersAndGauges(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let recorded = TestMetrics()
            h.configuration.metricsFactory = recorded
            _ = await h.fetch(h.request("/a.jpg", identifier: "timed"))
            _ = await h.fetch(h.request("/missing.jpg", identifier: "missing"))
            #expect(try recorded.expectTimer(PipelineMetricLabels.downloadTimeToFirstByte, [("status", "2xx")]).values.count == 1)
            #expect(try recorded.expectTimer(PipelineMetricLabels.downloadTimeToFirstByte, [("status", "4xx")]).values.count == 1)
            #expect(try recorded.expectTimer(PipelineMetricLabels.downloadDuration, [("result", "complete")]).values.count == 1)
            #expect(try recorded.expectTimer(PipelineMetricLabels.downloadDuration, [("result", "failed")]).values.count == 1)
            #expect(try recorded.expectTimer(PipelineMetricLabels.diskCacheOperation, [("operation", "write")]).values.count == 1)
            h.pipeline.clearMemoryCaches()
            _ = await h.fetch(h.request("/a.jpg", identifier: "timed"))
            #expect(try recorded.expectTimer(PipelineMetricLabels.diskCacheOperation, [("operation", "read")]).values.count >= 1)

            h.configuration.recordGauges()
            let memoryBytes = try recorded.expectGauge(PipelineMetricLabels.cacheBytes, [("cache", "memory")])
            #expect(memoryBytes.lastValue == Double(h.configuration.totalBytesForAllMemoryCaches))
            #expect(memoryBytes.lastValue ?? 0 > 0, "the fetched image is in the memory cache")
            #expect(try recorded.expectGauge(PipelineMetricLabels.cacheEntries, [("cache", "disk")]).lastValue
                    == Double(h.configuration.totalCountForAllDiskCaches))
            #expect(try recorded.expectGauge(PipelineMetricLabels.downloadsInFlight).lastValue == 0)
            #expect(try recorded.expectGauge(PipelineMetricLabels.decodesInFlight).lastValue == 0)

            #expect(h.configuration.gaugeRecordingInterval == nil, "off by default")
            let before = try recorded.expectGauge(PipelineMetricLabels.downloadsInFlight).values.count
            h.configuration.gaugeRecordingInterval = .milliseconds(20)
            #expect(try await eventually { ((try? recorded.expectGauge(PipelineMetricLabels.downloadsInFlight).values.count) ?? 0) >= before + 3 })
            h.configuration.gaugeRecordingInterval = nil
        }
    }

    @Test("Stage CPU times: off by default; on, a cold fetch records its cache reads, decode, stores, delivery and decodes at once",
          arguments: [CoordinatorDownloader.httpClient])
    func stageCPUTimes(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let recorded = TestMetrics()
            h.configuration.metricsFactory = recorded
            #expect(h.configuration.recordsStageCPUTime == false)
            _ = await h.fetch(h.request("/a.jpg", identifier: "off"))
            #expect(throws: (any Error).self) { try recorded.expectTimer(PipelineMetricLabels.stageCPUTime, [("stage", "decode")]) }
            #expect(throws: (any Error).self) { try recorded.expectTimer(PipelineMetricLabels.decodesAtOnceTime, [("decodes", "1")]) }

            h.configuration.recordsStageCPUTime = true
            h.server.setAsset(h.image, at: "/on.jpg", contentType: "image/jpeg")
            let (_, cold) = await h.fetch(h.request("/on.jpg", identifier: "on", target: PixelSize(width: 64, height: 64)))
            #expect(cold.metrics?.info(for: .network)?.result == .hitFinal)
            for stage in [PipelineStage.cacheRead, .decode, .scale, .memoryStore, .renditionStore, .diskWrite, .diskIndex, .delivery] {
                // The disk write follows the final callback: it may still be running.
                let seen = try await eventually {
                    let values = (try? recorded.expectTimer(PipelineMetricLabels.stageCPUTime, [("stage", stage.rawValue)]))?.values
                    return values.map { !$0.isEmpty && $0.allSatisfy { $0 >= 0 } } ?? false
                }
                #expect(seen, "\(stage)")
            }
            // Only the decode of a real image takes measurable CPU for sure.
            #expect(try recorded.expectTimer(PipelineMetricLabels.stageCPUTime, [("stage", "decode")]).values.max() ?? 0 > 0)
            // The one decode ran alone: its end recorded the time with one decode running.
            #expect(try recorded.expectTimer(PipelineMetricLabels.decodesAtOnceTime, [("decodes", "1")]).values.max() ?? 0 > 0)
        }
    }
}
