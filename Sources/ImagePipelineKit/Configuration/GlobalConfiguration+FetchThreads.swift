import Dispatch

extension GlobalConfiguration {
    /// The queue that runs the private queues of the fetches made from now on: by default libdispatch's utility
    /// pool (`DispatchQueue.global(qos: .utility)`), about a thread per core, which the fetches of every pipeline
    /// share; `nil`: each fetch's queue takes a thread of its own whenever it has work (libdispatch's
    /// overcommitting pool).
    ///
    /// On the shared pool, a fetch whose next step is ready (the bytes of its download are in, say) while the
    /// cores are busy waits for a pool thread to finish the step it runs, and that thread takes it without
    /// sleeping, instead of a new thread being woken to share a busy core: on two cores a cold fetch costs about
    /// half the wake-ups and context switches (docs/benchmarks.md), and no more decodes run at once than there
    /// are cores. Priorities order which fetches start (the operation queue); the steps of started fetches take
    /// the pool's threads in the order they become ready.
    ///
    /// The pipeline never makes a pool thread wait for another fetch: a decode that finds no room in the decode
    /// memory budget (``maxBytesForDecodesInFlight``) gives its thread back until there is some, and nothing is
    /// queued on a fetch's queue that its start would wait for. What can hold a pool thread is your code on a
    /// fetch's queue that waits on something (an ``ImageTransformer`` or ``ProgressiveLoadingPolicy`` that
    /// waits for a lock held long, or for the network), and a decode waiting for one of ``processingSlots``.
    /// While every pool thread waits, the other fetches' steps wait too: libdispatch adds a thread only once
    /// its pool has had work and too few runnable threads for about a second. Set `nil` when your code must
    /// wait there; every step then costs a thread's wake-up, and as many decodes run at once as fetches do.
    public var fetchQueueTarget: DispatchQueue? {
        get { chosenFetchQueueTarget.withLock { $0 } }
        set { chosenFetchQueueTarget.withLock { $0 = newValue } }
    }
}
