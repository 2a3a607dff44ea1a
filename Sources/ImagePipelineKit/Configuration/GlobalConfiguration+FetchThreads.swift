import Dispatch

extension GlobalConfiguration {
    /// The queue that runs the private queues of the fetches made from now on; `nil` (the default): each
    /// fetch's queue takes a thread of its own whenever it has work (libdispatch's overcommitting utility pool).
    ///
    /// Set `DispatchQueue.global(qos: .utility)` on a server that fetches at full speed: the fetches then share
    /// that queue's pool, about one thread per core. While the cores are busy, a fetch whose next step is ready
    /// (the bytes of its download are in, say) waits for a pool thread to finish the step it runs, and that
    /// thread takes it without sleeping, instead of a new thread being woken to share a busy core: on two cores a
    /// cold fetch costs about half the wake-ups and context switches (docs/benchmarks.md). `image-service` sets
    /// it.
    ///
    /// An app keeps the default. On a shared pool a visible view's fetch waits behind the steps queued before
    /// it, whatever its priority, and a step that waits holds its pool thread meanwhile: a decode waiting for
    /// ``processingSlots`` or for decode memory (``maxBytesForDecodesInFlight``, which progressive downloads
    /// hold while their scans show), or your own ``ImageTransformer`` or ``ProgressiveLoadingPolicy`` waiting on
    /// something. libdispatch adds a thread only once its pool has had work and too few runnable threads for
    /// a second. The pipeline's own threads never wait there for a block queued on a fetch's queue.
    public var fetchQueueTarget: DispatchQueue? {
        get { chosenFetchQueueTarget.withLock { $0 } }
        set { chosenFetchQueueTarget.withLock { $0 = newValue } }
    }
}
