import Foundation
import Synchronization
import PipelineLocking

/// Runs image downloads for fetches: one download shared by identical fetches, highest priority first, a
/// bounded number at a time, resuming partial images (the rules of TIP's image downloader).
///
/// - Fetches share a download when URL, identifier, pipeline, extra headers and hydration key are equal
///   (``ImageDownloadRequest/hydrationKey``). A fetch that joins late gets the response and the bytes so far.
/// - A download runs at the highest priority of its fetches, recomputed when one joins, leaves or changes
///   priority; waiting downloads start highest priority first, at most ``maxConcurrentDownloads`` at a time.
/// - Cancelling one fetch detaches it; cancelling the last one cancels the download, and that fetch gets the
///   partial image to keep for resuming.
/// - Background work yields (``yieldsBackgroundDownloads``): a download whose fetches are all at `.veryLow`
///   (prefetches, fetches of views that left the screen) starts only while no other download waits or runs, and
///   one that is running when another download comes is suspended: its transfer stops, its fetches stay
///   attached with the bytes they have, and once nothing else needs the link it continues where it stopped
///   (`Range` with `If-Range`). A download that cannot continue (no `Accept-Ranges: bytes` or no validator) goes
///   on instead.
/// - Resuming sends `Range: bytes=N-` with `If-Range` (a strong ETag, else Last-Modified); a `206` continues the
///   partial, a `200` starts over (clients hear `resumedByteCount` 0), a `416` is retried once without `Range`.
/// - Revalidating (``ImageDownloadRequest/revalidating``) sends `If-None-Match` and `If-Modified-Since`; a `304`
///   ends the load as ``DownloadOutcome/notModified(_:)``, any other answer as for a plain request.
///
/// Thread-safe. Everything mutable lives on one serial queue (TIP's downloader queue); its private methods
/// are named `_queue_…`, and clients are called on it.
public final class DownloadCoordinator: @unchecked Sendable {
    // @unchecked: `downloads`, `pending`, `running` and every SharedDownload are touched only on `queue`;
    // `limit`, `yields` and `unstored` are behind their locks.

    /// The downloader that moves the bytes.
    public let downloader: any ImageDownloader
    let queue = DispatchQueue(label: "ImagePipelineKit.DownloadCoordinator")
    private let onQueue = DispatchSpecificKey<ObjectIdentifier>()
    private let limit: Locked<Int>
    private let configuration: GlobalConfiguration
    private var downloads: [ImageDownloadRequest.SharingKey: SharedDownload] = [:]
    private var pending: [SharedDownload] = []
    private var running: [SharedDownload] = []
    private let yields = Locked(true)
    private var nextSequence = 0
    private var joins = 0
    /// The fan-out of the relayed burst this turn of the queue is taking, if it is taking one: where the shares
    /// of the fetches that joined the download go (see ``DownloadFanOut``).
    private(set) var _queue_fanOut: DownloadFanOut?
    /// Downloads that succeeded whose owner has not yet stored the image (see `sharesResultUntilStored`). The
    /// owner is only named, not held: holding it would keep its fetch, and the fetch's pipeline, alive. Behind a
    /// lock rather than on the queue: the owner says it stored the image from its own thread, as the last step
    /// of its fetch, and a turn of the queue for that would wake a thread per download.
    private let unstored = Locked<[ImageDownloadRequest.SharingKey: (result: DownloadResult, owner: ObjectIdentifier,
                                                                     expiry: DeadlineTimer.Token)]>([:])
    /// How long an unstored result is kept when its owner never says it stored it (it failed, or went away).
    static let unstoredResultLifetime: DispatchTimeInterval = .seconds(5)

    /// A coordinator over `downloader`, reporting problems to `configuration`.
    public init(downloader: any ImageDownloader, maxConcurrentDownloads: Int = 4, configuration: GlobalConfiguration = .shared) {
        self.downloader = downloader
        self.limit = Locked(maxConcurrentDownloads)
        self.configuration = configuration
        queue.setSpecific(key: onQueue, value: ObjectIdentifier(self))
    }

    /// How many downloads run at once (TIP's `maxConcurrentImagePipelineDownloadCount`, default 4). Read each
    /// time a download could start: negative is unlimited, 0 starts nothing until raised.
    public var maxConcurrentDownloads: Int {
        get { limit.withLock { $0 } }
        set {
            limit.withLock { $0 = newValue }
            queue.async { self._queue_startPending() }
        }
    }

    /// Whether background downloads (all of their fetches at `.veryLow`) yield to the others: they start only
    /// while no other download waits or runs, and a running one is suspended, to continue later where it
    /// stopped, when another comes. Default `true`; with `false`, priority only orders the downloads waiting
    /// for a slot, as in TIP.
    public var yieldsBackgroundDownloads: Bool {
        get { yields.withLock { $0 } }
        set {
            yields.withLock { $0 = newValue }
            queue.async { self._queue_rebalance() }
        }
    }

    /// Attaches `client` to the download of `request` — an identical running or waiting one, or a new one —
    /// at `priority`. Events reach `client` later, on the coordinator's queue; none before this returns.
    ///
    /// With `sharesResultUntilStored`, a download this load owns that succeeds stays joinable after it ended:
    /// identical loads get its bytes (as a late joiner would) until the owner calls
    /// ``DownloadAttachment/resultStored()``, having put the image where later fetches look first. That closes
    /// the window between a download's end and the cache write, a decode long, in which an identical fetch would
    /// otherwise start a second download.
    public func load(_ request: ImageDownloadRequest, priority: Operation.QueuePriority = .normal,
                     client: any DownloadClient, sharesResultUntilStored: Bool = false) -> DownloadAttachment {
        let attachment = DownloadAttachment(coordinator: self, client: client, priority: priority,
                                               sharesResultUntilStored: sharesResultUntilStored)
        runOnQueue { _queue_attach(attachment, request: request) }
        return attachment
    }

    /// How many downloads are waiting or running (for tests and inspection).
    public var activeDownloadCount: Int { runOnQueue { pending.count + running.count } }

    /// How many loads joined a download already waiting or running instead of starting their own.
    public var sharedLoadCount: Int { runOnQueue { joins } }

    /// Runs `body` on the queue, inline when already there (a client starting a load from a callback).
    func runOnQueue<T>(_ body: () -> T) -> T {
        DispatchQueue.getSpecific(key: onQueue) == ObjectIdentifier(self) ? body() : queue.sync(execute: body)
    }

    // MARK: - On the queue

    /// Runs `body`, which takes a burst of `download`'s events relayed on `homeQueue`, and returns the shares of
    /// the fetches that joined the download, to be run once the turn is over.
    func _queue_fanningOut(of download: SharedDownload, from homeQueue: DispatchQueue, _ body: () -> Void) -> DownloadFanOut {
        let fanOut = DownloadFanOut(homeQueue: homeQueue) { download._queue_fanOutQueue }
        let outer = _queue_fanOut
        _queue_fanOut = fanOut
        defer { _queue_fanOut = outer }
        body()
        return fanOut
    }

    private func _queue_attach(_ attachment: DownloadAttachment, request: ImageDownloadRequest) {
        let key = request.sharingKey
        if let key, let download = downloads[key], !download.isFinished {
            joins += 1
            download._queue_join(attachment)
            download._queue_updatePriority()
            return _queue_rebalance()
        }
        if let key, let (result, _, _) = unstored.withLock({ $0[key] }) {
            joins += 1
            _queue_replay(result, to: attachment)
            return
        }
        nextSequence += 1
        let download = SharedDownload(coordinator: self, request: request, sharingKey: key, sequence: nextSequence,
                                      owner: attachment)
        if let key { downloads[key] = download }
        pending.append(download)
        _queue_rebalance()
    }

    /// Suspends the running background downloads while another download waits or runs, then starts what may
    /// start. Called whenever a download comes, ends or changes priority.
    func _queue_rebalance() {
        if yieldsBackgroundDownloads, (pending + running).contains(where: { !$0.isBackground }) {
            for download in running where download.isBackground && download._queue_suspend() {
                running.removeAll { $0 === download }
                pending.append(download)
            }
        }
        _queue_startPending()
    }

    /// Starts waiting downloads, highest priority first (oldest first among equals), while the limit allows.
    func _queue_startPending() {
        while !pending.isEmpty {
            let max = maxConcurrentDownloads
            guard max < 0 || running.count < max else { return }
            let next = pending.indices.max { a, b in
                pending[a].priority.rawValue != pending[b].priority.rawValue
                    ? pending[a].priority.rawValue < pending[b].priority.rawValue
                    : pending[a].sequence > pending[b].sequence
            }!
            // The most urgent download waiting is background work: it waits too while anything else downloads.
            if pending[next].isBackground, yieldsBackgroundDownloads, running.contains(where: { !$0.isBackground }) { return }
            let download = pending.remove(at: next)
            running.append(download)
            download._queue_start()
        }
    }

    /// A download ended (completed, failed, or its last fetch left): frees its slot and its key.
    func _queue_downloadEnded(_ download: SharedDownload) {
        if let key = download.sharingKey, downloads[key] === download { downloads[key] = nil }
        running.removeAll { $0 === download }
        pending.removeAll { $0 === download }
        _queue_startPending()
    }

    /// Keeps a successful download's result for identical loads until `owner` stored it (or a while passed).
    func _queue_keepUnstored(_ result: DownloadResult, key: ImageDownloadRequest.SharingKey, owner: DownloadAttachment) {
        let owner = ObjectIdentifier(owner)
        let expiry = DeadlineTimer.shared.schedule(after: Self.unstoredResultLifetime) { [weak self] in
            self?.unstored.withLock { unstored in
                if unstored[key]?.owner == owner { unstored[key] = nil }
            }
        }
        if let replaced = unstored.withLock({ $0.updateValue((result, owner, expiry), forKey: key) }) {
            DeadlineTimer.shared.cancel(replaced.expiry)
        }
    }

    /// `owner` stored its download's image: identical loads start their own download from now on. Any thread.
    func resultStored(by owner: DownloadAttachment) {
        let expiries = unstored.withLock { unstored -> [DeadlineTimer.Token] in
            let keys = unstored.filter { $0.value.owner == ObjectIdentifier(owner) }.map(\.key)
            return keys.compactMap { unstored.removeValue(forKey: $0)?.expiry }
        }
        expiries.forEach { DeadlineTimer.shared.cancel($0) }
    }

    /// A finished download's events for a load that came after its end: response, every byte, success (not
    /// as owner), on a later turn of the queue.
    private func _queue_replay(_ result: DownloadResult, to attachment: DownloadAttachment) {
        queue.async {
            guard !attachment.isDetached else { return }
            attachment.isDetached = true
            let client = attachment.client
            client.downloadAttachment(attachment, didReceive: result.response, resumedByteCount: 0,
                               expectedByteCount: result.data.count)
            if !result.data.isEmpty { client.downloadAttachment(attachment, didAppend: result.data, totalByteCount: result.data.count) }
            var shared = result
            shared.isOwner = false
            shared.wasResumed = false
            client.downloadAttachment(attachment, didFinishWith: .success(shared))
        }
    }

    /// Where the downloads' timers go.
    var configurationForMetrics: GlobalConfiguration { configuration }

    func report(_ problem: ImagePipelineProblem) {
        configuration.report(problem)
    }

    func log(_ message: @autoclosure () -> String, url: URL) {
        configuration.log(.debug, "\(message())", metadata: ["url": .string(url.absoluteString)])
    }
}

/// One fetch's membership in a shared download: change its priority or leave it. Thread-safe.
public final class DownloadAttachment: @unchecked Sendable {
    // @unchecked: `download`, `isDetached` and `isCaughtUp` are touched only on the coordinator's queue;
    // `currentPriority` is behind its lock.
    let client: any DownloadClient
    private let coordinator: DownloadCoordinator
    private let currentPriority: Locked<Operation.QueuePriority>
    /// The download this fetch belongs to; the two hold each other until the fetch is detached.
    var download: SharedDownload?
    /// Set once the fetch's outcome was delivered (or it left).
    var isDetached = false
    /// False for a late joiner until it has been sent the response and bytes so far.
    var isCaughtUp = true
    /// See ``DownloadCoordinator/load(_:priority:client:sharesResultUntilStored:)``.
    let sharesResultUntilStored: Bool

    init(coordinator: DownloadCoordinator, client: any DownloadClient, priority: Operation.QueuePriority,
         sharesResultUntilStored: Bool) {
        self.coordinator = coordinator
        self.client = client
        self.sharesResultUntilStored = sharesResultUntilStored
        currentPriority = Locked(priority)
    }

    /// The owner of a successful download stored its image where later fetches look first: identical loads
    /// from now on start their own download. Needed only for loads made with `sharesResultUntilStored`.
    public func resultStored() {
        coordinator.resultStored(by: self)
    }

    /// This fetch's priority; changing it re-prioritises the shared download (and its place in the queue).
    public var priority: Operation.QueuePriority {
        get { currentPriority.withLock { $0 } }
        set {
            currentPriority.withLock { $0 = newValue }
            coordinator.queue.async { [self] in
                if let download, !isDetached { download._queue_updatePriority() }
            }
        }
    }

    /// Identifies the underlying download: fetches sharing one see the same value (TIP's download context).
    public var downloadIdentifier: ObjectIdentifier? {
        coordinator.runOnQueue { download.map(ObjectIdentifier.init) }
    }

    /// The fan-out of the burst the coordinator's queue is taking now, if any (see ``DownloadFanOut``).
    var _queue_fanOut: DownloadFanOut? { coordinator._queue_fanOut }

    /// Leaves the download: this fetch gets a ``ImageDownloadError/cancelled`` outcome (with the partial image,
    /// when it was the last fetch and the download stops); the others carry on. Asynchronous; idempotent.
    public func cancel() {
        coordinator.queue.async { [self] in
            guard !isDetached, let download else { return }
            download._queue_detach(self)
        }
    }
}
