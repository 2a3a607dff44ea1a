import Dispatch

/// The shares of one burst of a download's events that go to the fetches that joined it (not to the fetch that
/// started it, whose thread is the one relaying the burst), handed out together: one block, on a queue of the
/// download's own, runs each fetch's share in place on that fetch's queue (`sync`), on every core at once.
///
/// Sent one by one, each share was a block of its fetch's queue, and with a thread per fetch every one of them
/// woke a thread of its own: a download that six fetches share cost six wake-ups at each burst and at its end.
/// Together they cost one, and a worker for each other core that `concurrentPerform` finds work for.
///
/// Only with a thread per fetch: on a ``GlobalConfiguration/fetchQueueTarget`` a joined fetch takes its share as
/// a block of its queue, which a busy pool thread takes without waking (see
/// ``FetchOperation/runFromAnotherThread(holdingOpen:_:)``).
///
/// Collected during a turn of the coordinator's queue (``DownloadCoordinator/_queue_fanningOut(of:from:_:)``),
/// run once the turn is over: a fetch's share may decode, which must not hold the coordinator's queue.
///
/// It cannot deadlock: the block that runs the shares holds no queue of the pipeline, and no share waits for
/// another. A fetch whose bytes another fetch is decoding returns from its share at once; the decoding fetch
/// hands it the image later, in place on its queue (`sync`), which is idle by then.
final class DownloadFanOut: @unchecked Sendable {
    // @unchecked: `shares` is filled on the coordinator's queue, during one turn, and read by `run` after it.

    /// The queue of the thread that relays the burst: a client on it takes its share as the next block of that
    /// queue, on the same thread, as before.
    let homeQueue: DispatchQueue
    /// The download's queue for its fan-outs, asked for with the first share (most downloads have none): one
    /// serial queue per download keeps its bursts' fan-outs in order, and, not being a pool's, it never waits
    /// for a pool thread that is busy or blocked.
    private let makeRunQueue: () -> DispatchQueue
    private var runQueue: DispatchQueue?
    private var shares: [(queue: DispatchQueue, share: @Sendable () -> Void)] = []

    init(homeQueue: DispatchQueue, runQueue: @escaping () -> DispatchQueue) {
        self.homeQueue = homeQueue
        makeRunQueue = runQueue
    }

    /// Runs `share` on `queue`: in the next block of `queue` when it is the home queue, or with the other
    /// fetches' shares once the turn is over.
    func add(_ share: @escaping @Sendable () -> Void, on queue: DispatchQueue) {
        if queue === homeQueue { return queue.async(execute: share) }
        if runQueue == nil { runQueue = makeRunQueue() }
        shares.append((queue, share))
    }

    /// Hands the shares collected out; nothing when there are none.
    func run() {
        guard let runQueue, !shares.isEmpty else { return }
        let shares = self.shares
        runQueue.async {
            DispatchQueue.concurrentPerform(iterations: shares.count) { shares[$0].queue.sync(execute: shares[$0].share) }
        }
    }
}
