import ImagePipelineKit
import Metrics
import PipelineLocking

/// The service's metrics, through swift-metrics (the `image-service` executable exports them in Prometheus'
/// format at `/metrics`; a host application bootstraps its own backend):
///
/// | name | type | dimensions |
/// |---|---|---|
/// | `image_service_requests_total` | counter | `status` |
/// | `image_service_request_duration_seconds` | timer | |
/// | `image_service_requests_in_flight` | gauge | |
/// | `image_service_requests_shed_total` | counter | |
/// | `image_service_renders_total` | counter | `format` |
/// | `image_service_result_cache_hits_total` | counter | `tier` (`memory`, `disk`) |
/// | `image_service_source_loads_total` | counter | `tier` (where the pipeline found the source) |
/// | `image_service_source_fetch_seconds` | timer | (download or cache read, decode, scale) |
/// | `image_service_encode_seconds` | timer | (cut, flips, padding, encoder) |
final class ServiceMetrics: Sendable {
    private let inFlight = Locked(0)
    private let inFlightGauge = Gauge(label: "image_service_requests_in_flight")
    private let duration = Metrics.Timer(label: "image_service_request_duration_seconds")
    private let shed = Counter(label: "image_service_requests_shed_total")
    private let fetchTime = Metrics.Timer(label: "image_service_source_fetch_seconds")
    private let encodeTime = Metrics.Timer(label: "image_service_encode_seconds")
    /// The counters by dimension, made once each: making one asks the metrics backend's registry.
    private let requestsByStatus = Locked<[Int: Counter]>([:])
    private let resultCacheHits = Dictionary(uniqueKeysWithValues: [ResultCache.Tier.memory, .disk].map { tier in
        (tier, Counter(label: "image_service_result_cache_hits_total", dimensions: [("tier", tier.rawValue)]))
    })

    func requestStarted() {
        inFlightGauge.record(inFlight.withLock { $0 += 1; return $0 })
    }

    func requestFinished(status: Int, duration elapsed: Duration, shed wasShed: Bool) {
        inFlightGauge.record(inFlight.withLock { $0 -= 1; return $0 })
        requestsByStatus.withLock { counters in
            if let counter = counters[status] { return counter }
            let counter = Counter(label: "image_service_requests_total", dimensions: [("status", String(status))])
            counters[status] = counter
            return counter
        }.increment()
        duration.recordSeconds(elapsed / .seconds(1))
        if wasShed { shed.increment() }
    }

    func resultCacheHit(tier: ResultCache.Tier) {
        resultCacheHits[tier]?.increment()
    }

    func rendered(_ rendered: ThumbnailRenderer.Rendered) {
        Counter(label: "image_service_renders_total", dimensions: [("format", rendered.format.rawValue)]).increment()
        Counter(label: "image_service_source_loads_total", dimensions: [("tier", rendered.sourceTier.description)]).increment()
        fetchTime.recordSeconds(rendered.fetchSeconds)
        encodeTime.recordSeconds(rendered.encodeSeconds)
    }
}
