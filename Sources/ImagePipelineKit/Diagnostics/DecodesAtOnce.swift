import CoreMetrics
import Synchronization

extension PipelineMetricLabels {
    /// Wall time during which a number of fetch decodes ran at once (timer); `decodes` dimension with the
    /// number. Recorded only while ``GlobalConfiguration/recordsStageCPUTime`` is on (see that property).
    public static let decodesAtOnceTime = "image_pipeline_decodes_at_once_time"
}

/// How many fetch decodes of one configuration's pipelines are running, and since when: each start or end of
/// one records the wall time spent at the number before it (``PipelineMetricLabels/decodesAtOnceTime``).
///
/// Time with fewer decodes than cores is time in which a core had no decode to run (the fetches were waiting for
/// bytes, or for a thread); time with more is decodes sharing the cores, each taking longer in wall time.
final class DecodesAtOnce: Sendable {
    private struct State {
        var running = 0
        /// When `running` last changed; `nil` until the first decode measured.
        var since: ContinuousClock.Instant?
    }

    private let state = Mutex(State())

    /// Decodes running now.
    var running: Int { state.withLock { $0.running } }

    /// Runs `body`, one decode, counted among those running while it runs.
    func counting<T>(recordingTo configuration: GlobalConfiguration, _ body: () throws -> T) rethrows -> T {
        change(by: 1, recordingTo: configuration)
        defer { change(by: -1, recordingTo: configuration) }
        return try body()
    }

    private func change(by delta: Int, recordingTo configuration: GlobalConfiguration) {
        let now = ContinuousClock.now
        let (running, elapsed) = state.withLock { state -> (Int, Duration?) in
            defer {
                state.running += delta
                state.since = now
            }
            return (state.running, state.since.map { now - $0 })
        }
        guard let elapsed else { return }
        Timer(label: PipelineMetricLabels.decodesAtOnceTime, dimensions: [("decodes", "\(running)")],
              factory: configuration.metricsFactory)
            .recordNanoseconds(elapsed.nanoseconds)
    }
}
