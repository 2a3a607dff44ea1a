import Dispatch
import Foundation
import PipelineLocking
#if canImport(Glibc)
import Glibc
#endif

/// Per-operation timing for the cache benchmarks: each call timed alone, percentiles per round, medians over
/// rounds, ours and the anchor in the same round.
enum Timing {
    /// p50 and p99 of one workload, in the unit of the caller's choice.
    struct Percentiles {
        var p50: Double
        var p99: Double
    }

    /// Ours and its anchor (nanoseconds), medians over rounds.
    struct Comparison {
        var ours: Percentiles
        var anchor: Percentiles?

        var ratio: Double? { anchor.map { ours.p50 / max($0.p50, 0.001) } }
    }

    /// Items per second of `count` items shared out over `threads` new threads: each thread makes its worker
    /// once, then calls it with the next index not taken yet, until none is left. The first error stops every
    /// thread and is thrown.
    static func itemsPerSecond(count: Int, threads: Int,
                               worker makeWorker: @escaping @Sendable () throws -> (Int) throws -> Void) throws -> Double {
        let next = Locked(0)
        let failure = Locked<(any Error)?>(nil)
        let group = DispatchGroup()
        let started = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<threads {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let work = try makeWorker()
                    while failure.withLock({ $0 == nil }) {
                        let index = next.withLock { value -> Int in defer { value += 1 }; return value }
                        guard index < count else { return }
                        try work(index)
                    }
                } catch {
                    failure.withLock { $0 = $0 ?? error }
                }
            }
        }
        group.wait()
        if let error = failure.withLock({ $0 }) { throw error }
        return Double(count) / (Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
    }

    @inline(__always)
    static func monotonic() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
    }

    @inline(__always)
    static func nanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// Median nanoseconds of an empty timed region: subtracted from every sample.
    static func clockOverhead() -> Double {
        var samples = [Double]()
        samples.reserveCapacity(100_000)
        for _ in 0..<100_000 {
            let start = nanoseconds()
            samples.append(Double(nanoseconds() &- start))
        }
        return median(samples)
    }

    /// Times `ours` and `anchor` on every key, `rounds` times. Fails when either returns false (a miss where a
    /// hit was expected): a benchmark of the wrong thing is worse than none.
    static func compare(
        rounds: Int, overhead: Double, keys: [String], ours: (String) -> Bool, anchor: (String) -> Bool
    ) throws -> Comparison {
        var oursRounds: [Percentiles] = [], anchorRounds: [Percentiles] = []
        for _ in 0..<max(1, rounds) {
            oursRounds.append(try percentiles(keys: keys, overhead: overhead, ours))
            anchorRounds.append(try percentiles(keys: keys, overhead: overhead, anchor))
        }
        return Comparison(ours: medianOf(oursRounds), anchor: medianOf(anchorRounds))
    }

    /// Mean nanoseconds per call over a loop through every key, thread CPU time, median over `rounds`: the
    /// usual way to time a dictionary lookup, so these rows compare with such figures. No clock read per call, so
    /// consecutive lookups overlap in the CPU as they would in a real loop.
    static func loopMean(rounds: Int, keys: [String], _ body: (String) -> Bool) throws -> Double {
        var means: [Double] = []
        for _ in 0..<max(1, rounds) {
            var hits = 0
            let start = threadCPUNanoseconds()
            for key in keys where body(key) { hits += 1 }
            let elapsed = threadCPUNanoseconds() &- start
            guard hits == keys.count else { throw BenchError("a lookup missed in the loop") }
            means.append(Double(elapsed) / Double(keys.count))
        }
        return median(means)
    }

    @inline(__always)
    static func threadCPUNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    private static func percentiles(keys: [String], overhead: Double, _ body: (String) -> Bool) throws -> Percentiles {
        var samples = [Double](repeating: 0, count: keys.count)
        for (index, key) in keys.enumerated() {
            let start = nanoseconds()
            let ok = body(key)
            let elapsed = nanoseconds() &- start
            guard ok else { throw BenchError("a lookup did not return what the workload expects (\(key))") }
            samples[index] = max(Double(elapsed) - overhead, 0)
        }
        samples.sort()
        return Percentiles(p50: samples[samples.count / 2], p99: samples[min(samples.count - 1, samples.count * 99 / 100)])
    }

    private static func medianOf(_ rounds: [Percentiles]) -> Percentiles {
        Percentiles(p50: median(rounds.map(\.p50)), p99: median(rounds.map(\.p99)))
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    /// The disk anchor: what any file-per-entry cache must do at least — open, read it all, close.
    static func openReadClose(_ path: String) -> Int {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return -1 }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return -1 }
        var data = Data(count: Int(info.st_size))
        let count = data.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        return count
    }
}

/// A benchmark that would measure the wrong thing stops with this instead.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = "bench: " + description }
}

/// One line of the benchmark table.
struct BenchRow {
    var name: String
    /// "ns", "us" or "ms": how the row prints (samples are nanoseconds, except "ms" rows, already in ms).
    var unit: String
    var result: Timing.Comparison
    var anchorName: String
    var target: String

    static let header = "row            ours p50   ours p99   anchor              anchor p50  ratio   target"

    /// The row for `--json`: figures in the row's unit.
    var json: [String: Any] {
        var object: [String: Any] = ["name": name, "unit": unit == "ms" ? "ms" : "ns", "oursP50": result.ours.p50,
                                     "oursP99": result.ours.p99, "anchor": anchorName, "target": target]
        if let anchor = result.anchor { object["anchorP50"] = anchor.p50 }
        if let ratio = result.ratio { object["ratio"] = ratio }
        return object
    }

    var line: String {
        let scale: Double = switch unit { case "us": 1e-3; default: 1 }
        func format(_ value: Double) -> String { String(format: "%8.2f %@", value * scale, unit) }
        let anchorP50 = result.anchor.map { format($0.p50) } ?? "       -   "
        let ratio = result.ratio.map { String(format: "%5.2fx", $0) } ?? "    - "
        return "\(name.padding(toLength: 14, withPad: " ", startingAt: 0)) \(format(result.ours.p50)) \(format(result.ours.p99))  "
            + "\(anchorName.padding(toLength: 18, withPad: " ", startingAt: 0)) \(anchorP50)  \(ratio)  \(target)"
    }
}
