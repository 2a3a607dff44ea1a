import CoreMetrics
import Dispatch
import PipelineLocking

extension PipelineMetricLabels {
    /// Bytes every pipeline's cache of a tier holds (gauge): `cache` (`rendered`, `memory`, `disk`).
    public static let cacheBytes = "image_pipeline_cache_bytes"
    /// Entries every pipeline's cache of a tier holds (gauge): `cache`.
    public static let cacheEntries = "image_pipeline_cache_entries"
    /// Downloads running or waiting for a slot (gauge).
    public static let downloadsInFlight = "image_pipeline_downloads_in_flight"
    /// Fetch decodes running (gauge).
    public static let decodesInFlight = "image_pipeline_decodes_in_flight"
    /// Bytes of decoded pixels the decodes and progressive sessions hold (gauge):
    /// ``GlobalConfiguration/totalBytesForDecodesInFlight``.
    public static let decodeBytesInFlight = "image_pipeline_decode_bytes_in_flight"
}

extension GlobalConfiguration {
    /// Records the gauges of ``PipelineMetricLabels`` once, now: every cache tier's bytes and entries, the
    /// downloads and the decodes in flight, the decode memory they hold.
    public func recordGauges() {
        let factory = metricsFactory
        for (cache, bytes, entries) in [("rendered", totalBytesForAllRenderedCaches, totalCountForAllRenderedCaches),
                                        ("memory", totalBytesForAllMemoryCaches, totalCountForAllMemoryCaches),
                                        ("disk", totalBytesForAllDiskCaches, totalCountForAllDiskCaches)] {
            Gauge(label: PipelineMetricLabels.cacheBytes, dimensions: [("cache", cache)], factory: factory).record(bytes)
            Gauge(label: PipelineMetricLabels.cacheEntries, dimensions: [("cache", cache)], factory: factory).record(entries)
        }
        Gauge(label: PipelineMetricLabels.downloadsInFlight, factory: factory).record(downloadCoordinator.activeDownloadCount)
        Gauge(label: PipelineMetricLabels.decodesInFlight, factory: factory).record(decodesAtOnce.running)
        Gauge(label: PipelineMetricLabels.decodeBytesInFlight, factory: factory).record(totalBytesForDecodesInFlight)
    }

    /// How often the gauges are recorded (``recordGauges()``), or `nil` (the default) for never: a process that
    /// exports metrics sets it (the `image-service` executable uses 5 seconds). Reading the totals takes each
    /// cache's lock briefly, so a second or more suits it.
    public var gaugeRecordingInterval: Duration? {
        get { gaugeSampler.withLock { $0?.interval } }
        set {
            gaugeSampler.withLock { sampler in
                sampler?.timer.cancel()
                sampler = nil
                guard let interval = newValue, interval > .zero else { return }
                let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global(qos: .utility))
                timer.schedule(deadline: .now(), repeating: .nanoseconds(Int(interval.nanoseconds)))
                timer.setEventHandler { [weak self] in self?.recordGauges() }
                timer.resume()
                sampler = GaugeSampler(timer: timer, interval: interval)
            }
        }
    }
}

/// The timer behind ``GlobalConfiguration/gaugeRecordingInterval``.
struct GaugeSampler: @unchecked Sendable {
    // @unchecked: a DispatchSourceTimer is thread-safe; it is only scheduled, resumed and cancelled.
    let timer: any DispatchSourceTimer
    let interval: Duration
}
