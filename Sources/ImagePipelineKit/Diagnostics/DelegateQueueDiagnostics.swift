import Dispatch
import PipelineLocking
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What the pipeline does on delegate queues (a UI's main thread).
///
/// It counts heavy work done there: decoding, scaling and disk cache I/O, which must never run on a delegate
/// queue. The pipeline itself never does it; a caller can (``ImagePipeline/inspect()`` on the main queue, say).
/// `sample-cli scroll` asserts the count for its main queue stays 0.
///
/// With ``measuresWork`` on, it also counts the pipeline's turns on each delegate queue and adds up their CPU
/// time, your delegate callbacks included: how often and how much of the main thread the pipeline takes.
public enum DelegateQueueDiagnostics {
    /// Heavy operations and measured CPU time, by delegate queue (the value its `DispatchSpecificKey` holds).
    private struct Tallies {
        var violations: [ObjectIdentifier: Int] = [:]
        var work: [ObjectIdentifier: Duration] = [:]
        var turns: [ObjectIdentifier: Int] = [:]
    }

    /// Marks a delegate queue with its own identity, so that work can tell it runs there (never
    /// `Thread.isMainThread`: under `swift test` on Linux the main queue does not run on the main thread).
    static let delegateQueueKey = DispatchSpecificKey<ObjectIdentifier>()
    private static let tallies = Locked(Tallies())
    private static let measuring = Atomic<Bool>(false)

    /// How many heavy operations ran on any delegate queue in this process.
    public static var violationCount: Int { tallies.withLock { $0.violations.values.reduce(0, +) } }

    /// How many heavy operations ran on `queue` while it was a delegate queue. Take the difference of two
    /// readings: a queue's address can be reused after it is freed.
    public static func violationCount(on queue: DispatchQueue) -> Int {
        tallies.withLock { $0.violations[ObjectIdentifier(queue)] ?? 0 }
    }

    /// Whether the pipeline counts and times its turns on delegate queues (see ``workTime(on:)`` and
    /// ``turnCount(on:)``). Off by default: each turn then costs two reads of the thread's CPU clock.
    public static var measuresWork: Bool {
        get { measuring.load(ordering: .relaxed) }
        set { measuring.store(newValue, ordering: .relaxed) }
    }

    /// The CPU time the pipeline's turns on `queue` took while ``measuresWork`` was on: delivering fetch and
    /// store callbacks (your delegate's code included) and the stored-image notification. CPU time, so neither
    /// waiting for the queue nor the thread being descheduled counts. Take the difference of two readings.
    public static func workTime(on queue: DispatchQueue) -> Duration {
        tallies.withLock { $0.work[ObjectIdentifier(queue)] ?? .zero }
    }

    /// How many turns (blocks) the pipeline ran on `queue` while ``measuresWork`` was on: each one is a wake-up
    /// of that queue's thread, and on the main queue a slot taken between the app's own work. Take the
    /// difference of two readings.
    public static func turnCount(on queue: DispatchQueue) -> Int {
        tallies.withLock { $0.turns[ObjectIdentifier(queue)] ?? 0 }
    }

    /// Called where heavy work starts: counts it when the current queue is a delegate queue.
    static func noteHeavyWork() {
        guard let queue = DispatchQueue.getSpecific(key: delegateQueueKey) else { return }
        tallies.withLock { $0.violations[queue, default: 0] += 1 }
    }

    /// Runs `body`, one turn of the pipeline's work on the current delegate queue, timing it when measuring.
    static func delegateTurn(_ body: () -> Void) {
        guard measuresWork, let queue = DispatchQueue.getSpecific(key: delegateQueueKey) else {
            return body()
        }
        let start = threadCPUTime()
        body()
        let spent = threadCPUTime() - start
        tallies.withLock {
            $0.work[queue, default: .zero] += spent
            $0.turns[queue, default: 0] += 1
        }
    }

    /// The calling thread's CPU clock: a block never changes threads while it runs.
    private static func threadCPUTime() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}
