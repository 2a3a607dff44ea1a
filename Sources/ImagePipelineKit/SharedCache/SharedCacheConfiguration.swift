import Foundation

/// How a pipeline uses a fleet-shared cache (``SharedImageCache``): which one, under which namespace, and how
/// long it may hold a fetch up. Off by default; set ``ImagePipeline/sharedCache``.
public struct SharedCacheConfiguration: Sendable {
    /// The shared cache.
    public var cache: any SharedImageCache
    /// Separates fleets or deployments that share one cache; part of every key (``SharedCacheKey``).
    public var namespace: String
    /// The pipeline name in the keys; `nil` (the default) uses the pipeline's identifier. Pipelines of
    /// different identifiers that should share images (two in one process, say) give the same name.
    public var pipelineName: String?
    /// The longest one call to the cache may hold a fetch up; a call that takes longer counts as a miss and is
    /// reported as ``ImagePipelineProblem/sharedCacheUnavailable(reason:)``. Default 0.5 s.
    public var operationTimeout: Duration
    /// How long a fill lease lasts. A fetch waits for another process's download for at most twice this: the
    /// holder's lease and, when the holder died, the lease of the waiter that took over; then it downloads the
    /// image itself. Default 10 s.
    public var leaseTimeToLive: Duration
    /// How often a fetch waiting for another process's download asks the cache again. Default 50 ms.
    public var pollInterval: Duration
    /// Images larger than this are not written to the shared cache (they stay in the local caches). Default 8 MiB.
    public var maxValueBytes: Int

    /// A configuration for `cache`.
    /// - Parameters:
    ///   - cache: the shared cache.
    ///   - namespace: separates fleets sharing one cache (default `ipk`).
    ///   - pipelineName: the pipeline name in the keys (default: the pipeline's identifier).
    ///   - operationTimeout: the longest one call may take (default 0.5 s).
    ///   - leaseTimeToLive: how long a fill lease lasts (default 10 s).
    ///   - pollInterval: how often a waiting fetch asks again (default 50 ms).
    ///   - maxValueBytes: the largest image written to the cache (default 8 MiB).
    public init(cache: any SharedImageCache, namespace: String = "ipk", pipelineName: String? = nil, operationTimeout: Duration = .milliseconds(500),
                leaseTimeToLive: Duration = .seconds(10), pollInterval: Duration = .milliseconds(50),
                maxValueBytes: Int = 8 << 20) {
        self.cache = cache
        self.namespace = namespace
        self.pipelineName = pipelineName
        self.operationTimeout = operationTimeout
        self.leaseTimeToLive = leaseTimeToLive
        self.pollInterval = pollInterval
        self.maxValueBytes = maxValueBytes
    }
}
