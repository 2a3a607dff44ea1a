import CoreMetrics
import Foundation

/// The swift-metrics the pipelines emit. Labels and dimensions:
///
/// - `image_pipeline_fetches` (counter): `pipeline`, `result` (`success`, `failure`, `cancelled`), `source`
///   (`memory`, `disk`, `shared`, `additional`, `network`, `networkResumed`, `diskRevalidated`, `none`).
/// - `image_pipeline_cache_lookups` (counter): `pipeline`, `layer` (`rendered`, `memory`, `disk`, `table` (a
///   memory or disk image found as a ready rendition in ``RenditionTables``), `shared`, `additional`,
///   `revalidated` (a stale disk image the origin confirmed with a `304`)), `result` (`hit`, `miss`).
/// - `image_pipeline_revalidation_bytes_saved` (counter): `pipeline`; bytes of disk images that a `304`
///   confirmed, which would otherwise have been downloaded again (``CacheFreshnessPolicy/http``).
/// - `image_pipeline_network_bytes` (counter): `pipeline`; bytes of images completed from the network, counted
///   once per download however many fetches shared it.
/// - `image_pipeline_decode_duration` (timer): `format`; decoding (with scaling) of fetched or cached bytes.
/// - `image_pipeline_fetch_duration` (timer): `pipeline`, `result`.
/// - `image_pipeline_problems` (counter): `problem` (``ImagePipelineProblem/kind``, such as
///   `diskCacheWriteFailed` for a store a full disk refused).
/// - `image_pipeline_stage_cpu_time` (timer): `stage` (a ``PipelineStage``); only while
///   ``GlobalConfiguration/recordsStageCPUTime`` is on.
/// - `image_pipeline_shared_cache` (counter): `pipeline`, `event` (`hit`, `miss`, `leaseWait` (a fetch waited for
///   another process's download), `leaseFallback` (the wait ended without the image), `stored`, `rejected` (a
///   value that failed a check), `error` (a failed or timed-out call)).
public enum PipelineMetricLabels {
    public static let fetches = "image_pipeline_fetches"
    public static let cacheLookups = "image_pipeline_cache_lookups"
    public static let networkBytes = "image_pipeline_network_bytes"
    public static let revalidationBytesSaved = "image_pipeline_revalidation_bytes_saved"
    public static let decodeDuration = "image_pipeline_decode_duration"
    public static let fetchDuration = "image_pipeline_fetch_duration"
    public static let problems = "image_pipeline_problems"
    public static let sharedCache = "image_pipeline_shared_cache"
    /// Time from sending a download's request to its response head (timer): `status` (the status class, `2xx`…).
    public static let downloadTimeToFirstByte = "image_pipeline_download_time_to_first_byte"
    /// Time from sending a download's request to its end (timer): `result` (`complete`, `failed`).
    public static let downloadDuration = "image_pipeline_download_duration"
    /// Time a disk cache read or write took, the file and its index row together (timer): `operation` (`read`,
    /// `write`).
    public static let diskCacheOperation = "image_pipeline_disk_cache_operation"
}

extension GlobalConfiguration {
    /// Where the pipelines send their metrics (swift-metrics; labels in ``PipelineMetricLabels``). By default
    /// `MetricsSystem.factory`, read at each use, so bootstrapping `MetricsSystem` later still takes effect;
    /// the library never bootstraps it.
    public var metricsFactory: any MetricsFactory {
        get { chosenMetricsFactory.withLock { $0 } ?? MetricsSystem.factory }
        set { chosenMetricsFactory.withLock { $0 = newValue } }
    }

    enum FetchOutcome: String {
        case success, failure, cancelled
    }

    /// Counts a finished fetch, its cache lookups and its duration, and logs it at `debug`.
    func recordFetch(of pipeline: String, identifier: String, metrics: FetchMetrics, outcome: FetchOutcome) {
        let factory = metricsFactory
        let final = metrics.sources.last { $0.result == .hitFinal }
        log(.debug, "fetch finished", metadata: [
            "pipeline": .string(pipeline), "identifier": .string(identifier), "result": .string(outcome.rawValue),
            "source": .string(final.map { "\($0.source)" } ?? "none"),
            "duration-ms": .stringConvertible((metrics.totalDuration * 1000).rounded()),
        ])
        Counter(label: PipelineMetricLabels.fetches,
                dimensions: [("pipeline", pipeline), ("result", outcome.rawValue),
                             ("source", final.map { "\($0.source)" } ?? "none")],
                factory: factory).increment()
        for info in metrics.sources where info.result != .neverCompleted {
            let layer: String
            switch info.source {
            case .memoryCache:
                layer = info.wasLoadedSynchronously ? "rendered" : info.wasLoadedFromRenditionTable ? "table" : "memory"
            case .diskCache: layer = info.wasLoadedFromRenditionTable ? "table" : "disk"
            case .additionalCache: layer = "additional"
            case .diskRevalidated:
                guard info.result == .hitFinal, let saved = info.revalidationBytesSaved else { continue }
                Counter(label: PipelineMetricLabels.revalidationBytesSaved, dimensions: [("pipeline", pipeline)],
                        factory: factory).increment(by: Int64(saved))
                layer = "revalidated"
            case .sharedCache: layer = "shared"
            case .network, .networkResumed, .unknown: continue
            }
            Counter(label: PipelineMetricLabels.cacheLookups,
                    dimensions: [("pipeline", pipeline), ("layer", layer), ("result", info.result == .miss ? "miss" : "hit")],
                    factory: factory).increment()
        }
        Timer(label: PipelineMetricLabels.fetchDuration, dimensions: [("pipeline", pipeline), ("result", outcome.rawValue)],
              factory: factory).recordNanoseconds(Int64(metrics.totalDuration * 1e9))
    }

    /// Counts the synchronous path's rendered-cache miss (its hits are counted as fetches).
    func recordRenderedMiss(of pipeline: String) {
        Counter(label: PipelineMetricLabels.cacheLookups,
                dimensions: [("pipeline", pipeline), ("layer", "rendered"), ("result", "miss")],
                factory: metricsFactory).increment()
    }

    func recordProblem(_ problem: ImagePipelineProblem) {
        Counter(label: PipelineMetricLabels.problems, dimensions: [("problem", problem.kind)], factory: metricsFactory).increment()
    }

    /// What happened in a shared-cache step (``PipelineMetricLabels/sharedCache``).
    enum SharedCacheEvent: String {
        case hit, miss, leaseWait, leaseFallback, stored, rejected, error
    }

    func recordSharedCache(_ event: SharedCacheEvent, pipeline: String) {
        Counter(label: PipelineMetricLabels.sharedCache, dimensions: [("pipeline", pipeline), ("event", event.rawValue)],
                factory: metricsFactory).increment()
    }

    func recordNetworkBytes(_ bytes: Int, pipeline: String) {
        Counter(label: PipelineMetricLabels.networkBytes, dimensions: [("pipeline", pipeline)], factory: metricsFactory)
            .increment(by: Int64(bytes))
    }

    func recordDownloadTimeToFirstByte(_ elapsed: Duration, status: Int) {
        Timer(label: PipelineMetricLabels.downloadTimeToFirstByte, dimensions: [("status", "\(status / 100)xx")],
              factory: metricsFactory).recordNanoseconds(elapsed.nanoseconds)
    }

    func recordDownloadDuration(_ elapsed: Duration, complete: Bool) {
        Timer(label: PipelineMetricLabels.downloadDuration, dimensions: [("result", complete ? "complete" : "failed")],
              factory: metricsFactory).recordNanoseconds(elapsed.nanoseconds)
    }

    enum DiskCacheOperation: String { case read, write }

    /// Runs `body`, a disk cache read or write, and records its wall time
    /// (``PipelineMetricLabels/diskCacheOperation``).
    func timingDiskCache<T>(_ operation: DiskCacheOperation, _ body: () throws -> T) rethrows -> T {
        let started = ContinuousClock.now
        defer {
            Timer(label: PipelineMetricLabels.diskCacheOperation, dimensions: [("operation", operation.rawValue)],
                  factory: metricsFactory).recordNanoseconds((ContinuousClock.now - started).nanoseconds)
        }
        return try body()
    }

    func recordDecode(of type: ImageType?, duration: Duration) {
        Timer(label: PipelineMetricLabels.decodeDuration, dimensions: [("format", type.map { "\($0)" } ?? "unknown")],
              factory: metricsFactory).recordNanoseconds(duration.nanoseconds)
    }
}
