import Dispatch
import PipelineLocking

/// Counts heavy work done on a delegate queue: decoding, scaling and disk cache I/O, which must never run
/// there (a UI's main thread). The pipeline itself never does it; a caller can (``ImagePipeline/inspect()``
/// on the main queue, say). `sample-cli scroll` asserts the count for its main queue stays 0.
public enum DelegateQueueDiagnostics {
    /// By delegate queue (the value its `DispatchSpecificKey` holds).
    private static let counts = Locked<[ObjectIdentifier: Int]>([:])

    /// How many heavy operations ran on any delegate queue in this process.
    public static var violationCount: Int { counts.withLock { $0.values.reduce(0, +) } }

    /// How many heavy operations ran on `queue` while it was a delegate queue. Take the difference of two
    /// readings: a queue's address can be reused after it is freed.
    public static func violationCount(on queue: DispatchQueue) -> Int {
        counts.withLock { $0[ObjectIdentifier(queue)] ?? 0 }
    }

    /// Called where heavy work starts: counts it when the current queue is a delegate queue.
    static func noteHeavyWork() {
        guard let queue = DispatchQueue.getSpecific(key: GlobalConfiguration.delegateQueueKey) else { return }
        counts.withLock { $0[queue, default: 0] += 1 }
    }
}
