import Foundation
import Tracing
import Synchronization
import PipelineLocking

/// One image fetch through a pipeline (TIP's `TIPImageFetchOperation`).
///
/// An asynchronous Foundation `Operation`: add dependencies before handing it to
/// ``ImagePipeline/fetchImage(with:)``, which runs it on ``GlobalConfiguration/operationQueue`` (or completes
/// it on the spot for a rendered-cache hit on the delegate queue). It tries the rendered cache, the memory
/// cache, the disk caches (its own, then other live pipelines'), the additional caches and the network, in
/// that order and as ``FetchRequest/loadingSources`` allows, and tells its ``delegate`` on the delegate queue.
/// Its ``state`` never moves backwards.
///
/// Thread-safe: public properties can be read and ``priority`` changed from any thread.
public final class FetchOperation: Operation, @unchecked Sendable {
    // @unchecked: the fetch's working state (partial, network attachment, decoded images) is touched only on
    // `queue` (methods named `_queue_…`); what public getters read is behind `shared`'s lock; `lifecycle` is
    // thread-safe.

    /// TIP's fetch states: positive while active, negative once finished.
    public enum State: Int, Sendable {
        case idle = 0, starting = 1, loadingFromMemory = 2, loadingFromDisk = 3, loadingFromSharedCache = 4
        case loadingFromAdditionalCache = 5, loadingFromNetwork = 6
        case cancelled = -1, failed = -2, succeeded = -100

        public var isFinished: Bool { rawValue < 0 }
    }

    /// What public getters read; written under the lock from the operation's queue.
    struct Shared {
        var state = State.idle
        var progress = 0.0
        var receivedByteCount = 0
        var finalResult: FetchResult?
        var previewResult: FetchResult?
        var progressiveResult: FetchResult?
        var progressiveFrameCount = 0
        var error: FetchError?
        weak var weakDelegate: (any FetchDelegate)?
        var strongDelegate: (any FetchDelegate)?
        var delegateWasSet = false
        var priority: Operation.QueuePriority = .normal
        var attachment: DownloadAttachment?
        var enqueuedAt: Date?
        var startedAt: Date?
        var finishedAt: Date?
        var metrics: FetchMetrics?
        /// Handed to an operation queue, which must start it before it may report finished.
        var isInOperationQueue = false
        var hasStarted = false
        /// Another fetch queued an answer from its rendition for this one before it started (``WaitingFetches``).
        var answerQueued = false
        /// Answered while it waited in the operation queue (``WaitingFetches``): reports finished once started.
        var finishesWhenStarted = false
        /// Its steps began on its queue; before that, a `cancel()` sends the queue nothing (see `cancel()`).
        var stepsHaveBegun = false
        /// Set once `isFinished` turned true; `finishHandlers` run then.
        var reportedFinished = false
        var finishHandlers: [@Sendable () -> Void] = []
    }

    /// What was asked for. The fetch reads it once, when the operation is made.
    public let request: any FetchRequest
    public let pipeline: ImagePipeline
    /// The request resolved once: identifier, target, sources and every key derived from them.
    let plan: FetchPlan
    /// Anything the caller wants to keep with the operation.
    public let context: (any Sendable)?
    let shared = Locked(Shared())
    let lifecycle = OperationLifecycle()
    /// Utility QoS, as the operation queue's: decoding and scaling run here, and on Linux libdispatch gives
    /// utility work a higher nice value than the default, so a UI thread at a higher QoS wins the CPU. Its
    /// blocks run on the queue ``GlobalConfiguration/fetchQueueTarget`` names (the utility pool by default), or
    /// on a thread of their own when it names none.
    let queue: DispatchQueue
    /// Whether `queue` runs on the configuration's ``GlobalConfiguration/fetchQueueTarget`` (a shared pool as a
    /// rule, the utility pool by default) rather than on a thread of its own (see
    /// ``runFromAnotherThread(holdingOpen:_:)``).
    let runsOnSharedPool: Bool
    /// Delegate-queue work sent from `queue` and not yet run, oldest first (see `_queue_onDelegateQueue`).
    let pendingDelegateWork = Locked<[@Sendable () -> Void]>([])
    /// While set (on `queue`), this fetch's next turn of the delegate queue joins a turn shared with other
    /// fetches instead of being enqueued on its own (see `_queue_sharingDelegateTurn`).
    var sharedDelegateTurn: SharedDelegateTurn?
    /// The sources not tried yet, in order (see `_queue_loadFromNextSource`). On `queue`.
    var remainingSources = FetchSource.allCases[...]
    /// The partial image being resumed, once the memory or disk cache offered one. On `queue`.
    var resumablePartial: PartialImageData?
    /// The stale disk image being revalidated with a conditional request (``CacheFreshnessPolicy/http``), from
    /// the disk step until the origin answers. On `queue`.
    var revalidatingImage: CachedImageData?
    /// The download's response said `no-store`: under the HTTP policy, not even its partial bytes are kept. On
    /// `queue`.
    var responseForbidsStoring = false
    /// When the download's response head arrived: the response's age counts from then. On `queue`.
    var responseReceivedAt: Date?
    /// The shared cache's fill lease this fetch holds: it downloads the image and writes it through. On `queue`.
    var sharedCacheLease: SharedCacheLease?
    /// The sources tried so far, for ``metrics``. On `queue`.
    var metricsRecorder = FetchMetricsRecorder()
    /// The caller's trace context when the operation was made (a task's `ServiceContext`): the fetch's span is
    /// its child.
    let traceParent: ServiceContext
    /// Scans and first frames shown while downloading. On `queue`.
    var incremental = IncrementalImageState()
    /// The decode memory this fetch's decodes claimed, held until its delegate has the image: the decoded
    /// pixels live until then, whether or not the decode has returned. On `queue`.
    var decodeClaims: [DecodeMemoryBudget.Claim] = []
    /// When this fetch stops waiting for decode memory, from its decode's first stop for room; `nil` once a
    /// decode got its memory. On `queue`.
    var decodeMemoryWaitDeadline: DispatchTime?
    /// The optional callbacks the delegate has (none without a delegate): the others are never sent.
    let delegateCallbacks: FetchDelegateCallbacks

    init(request: any FetchRequest, pipeline: ImagePipeline, context: (any Sendable)?, delegate: (any FetchDelegate)?,
         holdsDelegateStrongly: Bool) {
        self.request = request
        self.pipeline = pipeline
        self.context = context
        plan = FetchPlan(request)
        let target = pipeline.configuration.fetchQueueTarget
        queue = DispatchQueue(label: "ImagePipelineKit.FetchOperation", qos: .utility, target: target)
        runsOnSharedPool = target != nil
        delegateCallbacks = delegate?.implementedCallbacks ?? []
        traceParent = ServiceContext.current ?? .topLevel
        super.init()
        shared.withLock {
            $0.delegateWasSet = delegate != nil
            if holdsDelegateStrongly { $0.strongDelegate = delegate } else { $0.weakDelegate = delegate }
        }
    }

    // MARK: - Public state

    public var state: State { shared.withLock { $0.state } }
    /// The delegate, while it lives (held weakly unless the operation came from the block API).
    public var delegate: (any FetchDelegate)? { shared.withLock { $0.strongDelegate ?? $0.weakDelegate } }
    /// Download progress so far, 0 ... 1 (1 once succeeded).
    public var progress: Double { shared.withLock { $0.progress } }
    /// Bytes of the image this fetch holds from the network so far: a resumed partial counts from where it
    /// left off. 0 for an image that came from a cache.
    public var receivedByteCount: Int { shared.withLock { $0.receivedByteCount } }
    public var finalResult: FetchResult? { shared.withLock { $0.finalResult } }
    /// The last progressive scan (or animated first frame) delivered, if any.
    public var progressiveResult: FetchResult? { shared.withLock { $0.progressiveResult } }
    /// Progressive scans delivered to the delegate so far.
    public var progressiveFrameCount: Int { shared.withLock { $0.progressiveFrameCount } }
    /// The preview offered to the delegate, if any: a cached image of the identifier from another URL.
    public var previewResult: FetchResult? { shared.withLock { $0.previewResult } }
    public var error: FetchError? { shared.withLock { $0.error } }
    /// What the fetch did, source by source; `nil` until it finished (set before the final callback).
    public var metrics: FetchMetrics? { shared.withLock { $0.metrics } }
    /// Seconds between being handed to the pipeline and starting, once started.
    public var timeSpentIdleInQueue: TimeInterval? {
        shared.withLock { state in state.startedAt.flatMap { start in state.enqueuedAt.map { start.timeIntervalSince($0) } } }
    }
    /// Seconds between starting and finishing, once finished.
    public var timeSpentExecuting: TimeInterval? {
        shared.withLock { state in state.finishedAt.flatMap { end in state.startedAt.map { end.timeIntervalSince($0) } } }
    }

    /// TIP's priority: readable and writable at any time. Before the operation starts it orders the
    /// operation queue; while it downloads it reaches the shared download (which runs at the highest
    /// priority of its fetches).
    public var priority: Operation.QueuePriority {
        get { shared.withLock { $0.priority } }
        set {
            let attachment = shared.withLock { state -> DownloadAttachment? in
                state.priority = newValue
                return state.attachment
            }
            if !isExecuting && !isFinished { queuePriority = newValue }
            attachment?.priority = newValue
        }
    }

    // MARK: - Operation

    public override var isAsynchronous: Bool { true }
    public override var isExecuting: Bool { lifecycle.isExecuting }
    public override var isFinished: Bool { lifecycle.isFinished }

    public override func start() {
        guard lifecycle.begin(self) else { return }
        let (wasAnswered, answerQueued) = shared.withLock { state in
            state.startedAt = Date()
            state.hasStarted = true
            return (state.finishesWhenStarted, state.answerQueued)
        }
        pipeline.waitingFetches.remove(self)
        if wasAnswered { return markFinished() }
        // The operation queue's thread runs the first steps itself (a sync on an idle queue runs in place): one
        // thread wake-up less per fetch, which is most of what a fetch answered from the rendered cache costs
        // (a hundred queued fetches of one image reach their delegates about twice as close together). Started by
        // hand on the delegate queue, it hops instead: nothing there may decode or touch the disk.
        //
        // The queue is idle here: nothing is sent to a fetch's queue before its steps begin (`cancel()` sends
        // nothing then) but an answer from another fetch's rendition, and the steps follow that answer rather than
        // wait for it. On a shared pool (``GlobalConfiguration/fetchQueueTarget``) that matters: this thread is a
        // pool thread, and one that waited for a queued block, which needs a pool thread itself, could hold the
        // last one.
        if pipeline.configuration.isOnDelegateQueue || answerQueued {
            queue.async { self._queue_start() }
        } else {
            queue.sync { self._queue_start() }
        }
    }

    /// Stops the fetch: the delegate then gets ``FetchErrorCode/cancelled``. Asynchronous; a fetch that
    /// already finished keeps its result.
    public override func cancel() {
        super.cancel()
        let (attachment, stepsHaveBegun) = shared.withLock { ($0.attachment, $0.stepsHaveBegun) }
        // A downloading fetch leaves its shared download; the download's answer finishes it. Otherwise the
        // next step of the source walk sees `isCancelled`.
        attachment?.cancel()
        // Steps that have not begun begin by looking at `isCancelled` (set above, before the flag was read under
        // the lock that `_queue_start` sets it under); a block sent now would only make `start()` wait for it.
        guard stepsHaveBegun else { return }
        queue.async { [self] in
            if attachment == nil, isExecuting, !state.isFinished { _queue_abortIfNeeded() }
        }
    }

    /// Stops calling the delegate; the fetch goes on.
    public func discardDelegate() {
        shared.withLock {
            $0.strongDelegate = nil
            $0.weakDelegate = nil
            $0.delegateWasSet = false
        }
    }

    /// ``cancel()`` and ``discardDelegate()``.
    public func cancelAndDiscardDelegate() {
        discardDelegate()
        cancel()
    }

    // MARK: - State

    /// True (and the fetch failed as cancelled) when it was cancelled or its weakly held delegate is gone.
    @discardableResult
    func _queue_abortIfNeeded() -> Bool {
        guard !state.isFinished else { return true }
        guard isCancelled || isDelegateGone else { return false }
        _queue_fail(FetchError(.cancelled))
        return true
    }

    /// A delegate was given, held weakly, and has been released (TIP cancels the fetch then).
    var isDelegateGone: Bool {
        shared.withLock { $0.delegateWasSet && $0.strongDelegate == nil && $0.weakDelegate == nil }
    }

    func _queue_setState(_ newState: State) {
        shared.withLock { state in
            // Never backwards: a later source has a higher number, and finished states are final.
            guard !state.state.isFinished, newState.isFinished || newState.rawValue > state.state.rawValue else { return }
            state.state = newState
        }
    }

    // MARK: - Finishing

    /// Succeeds with `result`. `afterDelivery` (the disk write and what follows it; the in-memory caches are
    /// written before this is called) runs on this queue once the final callback is handed to the delegate
    /// queue, beside it, and before the operation reports finished, so none of it delays the image.
    func _queue_succeed(_ result: FetchResult, afterDelivery: [AfterDeliveryStep] = []) {
        guard !state.isFinished else { return }
        metricsRecorder.hitFinal()
        let metrics = metricsRecorder.finish(cancelled: false)
        shared.withLock {
            $0.finalResult = result
            $0.progress = 1
            $0.attachment = nil
            $0.metrics = metrics
        }
        pipeline.configuration.recordFetch(of: pipeline.identifier, identifier: plan.identifier, metrics: metrics, outcome: .success)
        _queue_finish(state: .succeeded, afterDelivery: afterDelivery) { $0.fetchOperation(self, didLoadFinalImage: result) }
    }

    func _queue_fail(_ error: FetchError) {
        guard !state.isFinished else { return }
        let metrics = metricsRecorder.finish(cancelled: error.code == .cancelled, error: error)
        shared.withLock {
            $0.error = error
            $0.attachment = nil
            $0.metrics = metrics
        }
        pipeline.configuration.recordFetch(of: pipeline.identifier, identifier: plan.identifier, metrics: metrics,
                                           outcome: error.code == .cancelled ? .cancelled : .failure)
        _queue_finish(state: error.code == .cancelled ? .cancelled : .failed) {
            $0.fetchOperation(self, didFailToLoadFinalImageWith: error)
        }
    }

    /// Sets the final state, then hands the callback to the delegate, then runs `afterDelivery` on this queue
    /// without waiting for the callback, and reports the operation finished once both are over (TIP's ordering
    /// guarantee: the final callback happens before `isFinished`).
    private func _queue_finish(state finalState: State, afterDelivery: [AfterDeliveryStep] = [],
                               _ callback: @escaping @Sendable (any FetchDelegate) -> Void) {
        _queue_setState(finalState)
        _queue_releaseSharedCacheLease()
        _queue_releaseWorkingState()
        let claims = decodeClaims
        decodeClaims = []
        let sharedTurn = sharedDelegateTurn
        // The callback's turn and the rows after delivery each say when they are over; the second to end
        // reports the operation finished.
        let unfinished = Locked(afterDelivery.isEmpty ? 1 : 2)
        let partDone: @Sendable () -> Void = { [self] in
            if unfinished.withLock({ $0 -= 1; return $0 == 0 }) { markFinished() }
        }
        _queue_onDelegateQueue { [self] in
            if let delegate { pipeline.configuration.measuring(.delivery) { callback(delegate) } }
            // Given back once the delegate has the image (or the error): from here the pixels are the app's.
            claims.forEach { $0.releaseAll() }
            // In a turn that many fetches share, the operation's end (which starts the next fetches) waits for
            // the turn's last callback: started at once, it took a core from the delegate queue on a small
            // machine, and the callbacks after it came late.
            if let sharedTurn { sharedTurn.afterCallbacks(partDone) } else { partDone() }
        }
        guard !afterDelivery.isEmpty else { return }
        // The next block of this queue, so that the thread running it goes on to the rows as soon as this block
        // has handed the callback over (a shared turn is enqueued on the delegate queue at the end of the
        // block): no other thread wakes for them, and the image does not wait for them.
        queue.async { [self] in
            _queue_runAfterDelivery(afterDelivery)
            partDone()
        }
    }

    /// Drops what only a running fetch needs, as soon as it ends, not when the operation is released: an app
    /// may keep finished operations (a list of its fetches, a view's last one) for as long as it likes, and a
    /// progressive session holds a whole image's worth of coefficients and its claim on the decode memory
    /// budget. A cancelled fetch kept that way would otherwise hold both, and enough of them would leave the
    /// final decodes of the fetches still on screen waiting for budget that never comes back.
    private func _queue_releaseWorkingState() {
        if case .decoding(_, _, let claim) = incremental.phase { claim.releaseAll() }
        incremental = IncrementalImageState()
        incremental.phase = .done
        resumablePartial = nil
        revalidatingImage = nil
    }

    /// KVO-visible end of the operation. Also used by the synchronous rendered path, which never starts it.
    func markFinished() {
        // An operation in a queue reports finished only once the queue started it (corelibs-foundation warns
        // otherwise): a fetch answered while waiting finishes from `start()`.
        let waitsForStart = shared.withLock { state -> Bool in
            guard state.isInOperationQueue, !state.hasStarted else { return false }
            state.finishesWhenStarted = true
            return true
        }
        guard !waitsForStart else { return }
        shared.withLock {
            $0.finishedAt = Date()
            // Released now: the block API's delegate may hold the caller's completion and what it captured.
            $0.strongDelegate = nil
        }
        lifecycle.finish(self)
        let handlers = shared.withLock { state in
            state.reportedFinished = true
            defer { state.finishHandlers = [] }
            return state.finishHandlers
        }
        handlers.forEach { $0() }
    }

    /// Runs `body` once the operation reported finished (its caches written), at once when it already has.
    func whenFinished(_ body: @escaping @Sendable () -> Void) {
        let runNow = shared.withLock { state -> Bool in
            if state.reportedFinished { return true }
            state.finishHandlers.append(body)
            return false
        }
        if runNow { body() }
    }
}
