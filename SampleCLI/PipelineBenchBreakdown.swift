import CoreMetrics
import Foundation
import ImagePipelineKit
import PipelineLocking

/// Where a benchmark's CPU time went: the pipeline's own stage times (``PipelineStage``, recorded while
/// ``GlobalConfiguration/recordsStageCPUTime`` is on), the event-loop threads of SwiftNIO (the loopback origin
/// and the HTTP client share them), and the rest of the process (queue hops, locks, bookkeeping); and how many
/// decodes ran at once.
final class StageTimeCollector: MetricsFactory, Sendable {
    private let nanoseconds = Locked<[String: Int64]>([:])
    private let decodesAtOnce = Locked<[Int: Int64]>([:])

    /// CPU nanoseconds recorded per stage so far.
    var totals: [String: Int64] { nanoseconds.withLock { $0 } }

    /// Wall nanoseconds recorded per number of decodes running at once.
    var decodesAtOnceTotals: [Int: Int64] { decodesAtOnce.withLock { $0 } }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { IgnoredMetric() }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler { IgnoredMetric() }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        if label == PipelineMetricLabels.decodesAtOnceTime,
           let count = dimensions.first(where: { $0.0 == "decodes" }).flatMap({ Int($0.1) }) {
            return Summing { [self] nanoseconds in decodesAtOnce.withLock { $0[count, default: 0] += nanoseconds } }
        }
        guard label == PipelineMetricLabels.stageCPUTime, let stage = dimensions.first(where: { $0.0 == "stage" })?.1 else {
            return IgnoredMetric()
        }
        return Summing { [self] elapsed in nanoseconds.withLock { $0[stage, default: 0] += elapsed } }
    }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}

    /// A timer that hands what it records to `add`.
    private final class Summing: TimerHandler, Sendable {
        let add: @Sendable (Int64) -> Void
        init(_ add: @escaping @Sendable (Int64) -> Void) {
            self.add = add
        }
        func recordNanoseconds(_ duration: Int64) { add(duration) }
    }
}

/// CPU time of the whole process and of its SwiftNIO event-loop threads, read from the kernel.
struct ProcessCPUSnapshot {
    var process: Double
    /// The HTTP client's event loops: SwiftNIO's shared singleton group (threads named `NIO-SGLTN-…`).
    var clientLoops: Double
    /// The loopback origin's event loops: a group of its own (threads named `NIO-ELT-…`).
    var originLoops: Double
    /// What the cores the process may run on did (see ``CoreTimes``).
    var cores: CoreTimes?
    /// Context switches of the whole process: voluntary ones (a thread blocked, and was woken later: one
    /// wake-up each) and involuntary ones (a thread was preempted).
    var voluntarySwitches = 0
    var involuntarySwitches = 0
    /// The same, of the loopback origin's event-loop threads alone (a real server's origin is elsewhere).
    var originVoluntarySwitches = 0
    var originInvoluntarySwitches = 0

    static func now() -> ProcessCPUSnapshot {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let process = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        let origin = threadSwitches(namedWith: "NIO-ELT-")
        return ProcessCPUSnapshot(process: process, clientLoops: threadSeconds(namedWith: "NIO-SGLTN-"),
                                  originLoops: threadSeconds(namedWith: "NIO-ELT-"), cores: CoreTimes.now(),
                                  voluntarySwitches: usage.ru_nvcsw, involuntarySwitches: usage.ru_nivcsw,
                                  originVoluntarySwitches: origin.voluntary, originInvoluntarySwitches: origin.involuntary)
    }

    /// Context switches per image between `before` and this snapshot, the loopback origin's threads left out.
    func switchesPerImage(since before: ProcessCPUSnapshot, images: Int) -> (voluntary: Double, involuntary: Double) {
        let count = Double(max(images, 1))
        let voluntary = (voluntarySwitches - before.voluntarySwitches) - (originVoluntarySwitches - before.originVoluntarySwitches)
        let involuntary = (involuntarySwitches - before.involuntarySwitches)
            - (originInvoluntarySwitches - before.originInvoluntarySwitches)
        return (Double(voluntary) / count, Double(involuntary) / count)
    }

    /// The voluntary and involuntary context switches of the threads whose names start with `prefix`, from
    /// `/proc/self/task/N/status`.
    private static func threadSwitches(namedWith prefix: String) -> (voluntary: Int, involuntary: Int) {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.reduce((0, 0)) { total, task in
            guard let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
                  name.hasPrefix(prefix),
                  let status = try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8)
            else { return total }
            func field(_ key: String) -> Int {
                status.split(separator: "\n").first { $0.hasPrefix(key) }
                    .flatMap { Int($0.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "") } ?? 0
            }
            return (total.0 + field("voluntary_ctxt_switches:"), total.1 + field("nonvoluntary_ctxt_switches:"))
        }
    }

    /// The CPU seconds of the threads whose names start with `prefix` (event loops live as long as their
    /// group, so a difference of two readings is their share of what happened in between).
    private static func threadSeconds(namedWith prefix: String) -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.reduce(0) { total, task in
            guard let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
                  name.hasPrefix(prefix),
                  let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                  let afterName = stat.range(of: ") ")
            else { return total }
            // Fields after the name: state is the 3rd field of the line, utime the 14th and stime the 15th.
            let fields = stat[afterName.upperBound...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return total }
            return total + (user + system) / ticks
        }
    }
}

/// Prints CPU time per image by stage, for `images` fetches between `before` and `after`.
func printStageBreakdown(images: Int, stages: [String: Int64], before: ProcessCPUSnapshot, after: ProcessCPUSnapshot,
                         output: JSONOutput) {
    let perImage = { (seconds: Double) in seconds / Double(max(images, 1)) * 1e6 }
    let total = after.process - before.process
    let client = after.clientLoops - before.clientLoops
    let origin = after.originLoops - before.originLoops
    let staged = Double(stages.values.reduce(0, +)) / 1e9
    let row = { (name: String, seconds: Double) in
        let share = String(format: "%8.0f  %5.1f%%", perImage(seconds), seconds / max(total, 1e-9) * 100)
        output.say("  " + name.padding(toLength: 16, withPad: " ", startingAt: 0) + share)
    }
    output.say("CPU per image (microseconds), where it went:")
    for stage in PipelineStage.allCases { row(stage.rawValue, Double(stages[stage.rawValue] ?? 0) / 1e9) }
    row("client loops", client)
    row("other", max(total - client - origin - staged, 0))
    row("origin loops", origin)
    output.say("  " + "total".padding(toLength: 16, withPad: " ", startingAt: 0) + String(format: "%8.0f  (the whole process)", perImage(total)))
    output.say("  client loops: SwiftNIO's threads of the HTTP client (receiving); origin loops: the loopback origin's own")
    output.say("  threads (sending), which a real server would not spend; other: the rest of the process (queue hops, locks,")
    output.say("  the download coordinator and bookkeeping outside the stages).")
}

/// Prints the share of the time from the first decode's start to the last one's end during which each number
/// of decodes ran at once.
func printDecodesAtOnce(_ totals: [Int: Int64], output: JSONOutput) {
    let whole = Double(totals.values.reduce(0, +))
    guard whole > 0 else { return }
    let shares = totals.sorted { $0.key < $1.key }
        .map { String(format: "%d: %.0f%%", $0.key, Double($0.value) / whole * 100) }
    output.say("decodes at once, share of the time from the first decode's start to the last one's end: "
          + shares.joined(separator: ", "))
}
