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
/// wait for the disk lock does not count, a disk write's copying does. A stage that runs inside another (the
/// scaling inside a decode, the index inside a disk write) counts for itself only: the enclosing stage's time
/// leaves it out, so the stages of a fetch add up. Network receive runs on the downloader's own threads and is
/// not a stage here; a profile of the process shows it (docs/benchmarks.md says how).
public enum PipelineStage: String, Sendable, CaseIterable {
    /// Looking an image up in the memory or disk cache, reading its file included.
    case cacheRead
    /// Decoding encoded bytes at the target size: the codec's own work, DCT scaling included.
    case decode
    /// Resampling a decoded image to its target size, in a decode or after a transformer.
    case scale
    /// The request's transformer, when it has one.
    case transform
    /// Keeping decoded images: the rendered cache and the rendition tables.
    case renditionStore
    /// Keeping downloaded or found bytes in the memory cache.
    case memoryStore
    /// Writing a downloaded image to the disk cache: its file and its checksum.
    case diskWrite
    /// A disk write's work under the disk caches' lock: looking the entry up, renaming the written file into
    /// place, recording its row in the index, and pruning.
    case diskIndex
    /// The delegate's final callback, run on the delegate queue.
    case delivery
}

extension PipelineStage {
    /// The name of the stage's span in a fetch's trace: `image-pipeline.decode`, `image-pipeline.disk-write`, ….
    var spanName: String {
        switch self {
        case .cacheRead: "image-pipeline.cache-read"
        case .decode: "image-pipeline.decode"
        case .scale: "image-pipeline.scale"
        case .transform: "image-pipeline.transform"
        case .renditionStore: "image-pipeline.rendition-store"
        case .memoryStore: "image-pipeline.memory-store"
        case .diskWrite: "image-pipeline.disk-write"
        case .diskIndex: "image-pipeline.disk-index"
        case .delivery: "image-pipeline.delivery"
        }
    }
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
    ///
    /// While it is on, they also record how long each number of decodes ran at once
    /// (``PipelineMetricLabels/decodesAtOnceTime``), counting the decodes that started while it was on, from
    /// the first of them: whether a cold pipeline kept at least one decode per core going.
    public var recordsStageCPUTime: Bool {
        get { stageCPUTimeSwitch.load(ordering: .relaxed) }
        set { stageCPUTimeSwitch.store(newValue, ordering: .relaxed) }
    }

    /// Runs `body`, recording its CPU time as `stage` when stage times are on.
    func measuring<T>(_ stage: PipelineStage, _ body: () throws -> T) rethrows -> T {
        guard stageCPUTimeSwitch.load(ordering: .relaxed) else { return try body() }
        guard stage == .decode else { return try StageMeasurement.measure(stage, recordingTo: self, body) }
        return try decodesAtOnce.counting(recordingTo: self) {
            try StageMeasurement.measure(stage, recordingTo: self, body)
        }
    }

    fileprivate static func threadCPUNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}

extension PipelineStage {
    /// Runs `body`, recording its CPU time as this stage when the calling thread is measuring another stage:
    /// for the code that stages run and that has no configuration at hand (the scaler, the disk cache).
    func measuringWithinStage<T>(_ body: () throws -> T) rethrows -> T {
        guard let enclosing = StageMeasurement.current else { return try body() }
        return try StageMeasurement.measure(self, recordingTo: enclosing.configuration, body)
    }
}

/// A stage being measured on the calling thread: where stages inside it record, and their time, which its
/// own leaves out.
final class StageMeasurement: @unchecked Sendable {
    // @unchecked: used only by the thread that runs the measured work, as a task-local of its synchronous call.
    let configuration: GlobalConfiguration
    var nestedNanoseconds: Int64 = 0

    init(configuration: GlobalConfiguration) {
        self.configuration = configuration
    }

    @TaskLocal static var current: StageMeasurement?

    static func measure<T>(_ stage: PipelineStage, recordingTo configuration: GlobalConfiguration,
                           _ body: () throws -> T) rethrows -> T {
        let measurement = StageMeasurement(configuration: configuration)
        let enclosing = current
        let started = GlobalConfiguration.threadCPUNanoseconds()
        defer {
            let elapsed = GlobalConfiguration.threadCPUNanoseconds() - started
            enclosing?.nestedNanoseconds += elapsed
            Timer(label: PipelineMetricLabels.stageCPUTime, dimensions: [("stage", stage.rawValue)],
                  factory: configuration.metricsFactory)
                .recordNanoseconds(elapsed - measurement.nestedNanoseconds)
        }
        return try $current.withValue(measurement) { try body() }
    }
}
