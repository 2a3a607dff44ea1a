import CoreMetrics
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A part of a fetch whose CPU time the pipelines record when
/// ``GlobalConfiguration/recordsStageCPUTime`` is on, in the `image_pipeline_stage_cpu_time` timer
/// (``PipelineMetricLabels/stageCPUTime``) with a `stage` dimension of the case's name.
///
/// The times are the CPU time of the thread doing the work (`CLOCK_THREAD_CPUTIME_ID`), not wall time: a
/// wait for the disk lock does not count, a disk write's copying does. Network receive runs on the downloader's
/// own threads and is not a stage here; a profile of the process shows it (docs/benchmarks.md says how).
public enum PipelineStage: String, Sendable, CaseIterable {
    /// Looking an image up in the memory or disk cache, reading its file included.
    case cacheRead
    /// Decoding encoded bytes at the target size, scaling included.
    case decode
    /// The request's transformer, when it has one.
    case transform
    /// Keeping decoded images: the rendered cache and the rendition tables.
    case renditionStore
    /// Keeping downloaded or found bytes in the memory cache.
    case memoryStore
    /// Writing a downloaded image to the disk cache: its file, its checksum and the index row.
    case diskWrite
    /// The delegate's final callback, run on the delegate queue.
    case delivery
}

extension PipelineMetricLabels {
    /// The CPU time of one ``PipelineStage`` of one fetch (timer); `stage` dimension. Recorded only while
    /// ``GlobalConfiguration/recordsStageCPUTime`` is on.
    public static let stageCPUTime = "image_pipeline_stage_cpu_time"
}

extension GlobalConfiguration {
    /// Whether the pipelines on this configuration record the CPU time of each ``PipelineStage`` to
    /// ``metricsFactory``. Off by default: reading a thread's CPU clock twice per stage costs about a
    /// microsecond.
    public var recordsStageCPUTime: Bool {
        get { stageCPUTimeSwitch.load(ordering: .relaxed) }
        set { stageCPUTimeSwitch.store(newValue, ordering: .relaxed) }
    }

    /// Runs `body`, recording its CPU time as `stage` when stage times are on.
    func measuring<T>(_ stage: PipelineStage, _ body: () throws -> T) rethrows -> T {
        guard stageCPUTimeSwitch.load(ordering: .relaxed) else { return try body() }
        let started = Self.threadCPUNanoseconds()
        defer {
            Timer(label: PipelineMetricLabels.stageCPUTime, dimensions: [("stage", stage.rawValue)], factory: metricsFactory)
                .recordNanoseconds(Self.threadCPUNanoseconds() - started)
        }
        return try body()
    }

    private static func threadCPUNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
