import Dispatch
import Synchronization

/// Counts heavy work done on a delegate queue: decoding, scaling and disk cache I/O, which must never run
/// there (a UI's main thread). The pipeline itself never does it; a caller can (``ImagePipeline/inspect()``
/// on the main queue, say). `sample-cli scroll` asserts the count stays 0.
public enum DelegateQueueDiagnostics {
    private static let count = Atomic<Int>(0)

    /// How many heavy operations ran on a delegate queue in this process.
    public static var violationCount: Int { count.load(ordering: .relaxed) }

    /// Called where heavy work starts: counts it when the current queue is a delegate queue.
    static func noteHeavyWork() {
        if DispatchQueue.getSpecific(key: GlobalConfiguration.delegateQueueKey) != nil {
            count.add(1, ordering: .relaxed)
        }
    }
}
