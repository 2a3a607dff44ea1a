import Foundation
import CoreMetrics
import Tracing
import Logging
import Synchronization
import PipelineLocking

/// Limits and totals shared by every pipeline (TIP's `TIPGlobalConfiguration`, with its defaults and its
/// pruning across pipelines).
///
/// Byte and count ceilings apply to all caches of a kind together: after any write, the caches of the *other*
/// pipelines give up their least recently used entries first, then the written one, until the kind is within
/// its limits. Setters take effect at once (a lower limit prunes immediately). Thread-safe.
///
/// Semantics follow TIP: a negative value resets a limit to its default; a byte limit of 0 disables that
/// kind of cache (nothing is retained); a count limit of 0 means no count limit; a
/// ``maxRatioSizeOfCacheEntry`` of 0 or 1 puts no cap on a single entry, N > 1 caps it at 1/N of the kind's
/// byte limit.
public final class GlobalConfiguration: Sendable {
    /// The configuration every pipeline uses unless given another (tests make their own).
    public static let shared = GlobalConfiguration()

    let renderedPool: CachePool<RenderedCollection>
    let memoryPool: CachePool<CacheEntry>
    let diskPool: DiskCachePool
    private let observer = Locked<(any ProblemObserver)?>(nil)
    private let callbackQueue = Locked<DispatchQueue>(.main)
    private let pipelineObservers = Locked<[WeakObserver]>([])
    private let coordinator: Locked<DownloadCoordinator?> = Locked(nil)
    /// Where the disk caches report problems; connected to ``report(_:)`` once this configuration exists.
    private let diskProblems = ProblemRelay()
    private let currentLogger = Locked<Logger?>(nil)
    private let currentDownloadLimits = Locked(DownloadLimits())
    private let decodeSlots = Locked(GlobalConfiguration.defaultMaxConcurrentImageDecodeCount)
    private let decodeSlice = Locked<Duration?>(nil)
    private let chosenProcessingSlots = Locked<ProcessingSlots?>(nil)
    /// See ``fetchQueueTarget``.
    let chosenFetchQueueTarget = Locked<DispatchQueue?>(.global(qos: .utility))
    /// See ``recordsStageCPUTime``; read once per stage of every fetch, hence an atomic.
    let stageCPUTimeSwitch = Atomic<Bool>(false)
    /// The fetch decodes running now, counted while ``recordsStageCPUTime`` is on.
    let decodesAtOnce = DecodesAtOnce()
    private let currentAcceptHeader = Locked<String?>(nil)
    /// See ``metricsFactory``; `nil` reads `MetricsSystem.factory` at each use.
    let chosenMetricsFactory = Locked<(any MetricsFactory)?>(nil)
    let chosenTracer = Locked<(any Tracer)?>(nil)
    /// The timer of ``gaugeRecordingInterval``, cancelled with the configuration.
    let gaugeSampler = Locked<GaugeSampler?>(nil)

    private struct WeakObserver {
        weak var observer: (any ImagePipelineObserver)?
    }

    /// The queue fetch and store operations run on (TIP's one shared queue, at utility QoS).
    ///
    /// A fetch holds its slot from start to finish, its download included, so the queue's width is set to
    /// ``maxConcurrentImagePipelineDownloadCount`` plus ``maxConcurrentImageDecodeCount``: the fetches that
    /// download, and beside them as many as there are cores to decode and scale. On a two-core machine that is
    /// TIP's 6. Setting either property sets the width again; with unlimited downloads the width is unlimited.
    public let operationQueue: OperationQueue = {
        let queue = OperationQueue()
        queue.name = "ImagePipelineKit.operations"
        queue.maxConcurrentOperationCount = 4 + GlobalConfiguration.defaultMaxConcurrentImageDecodeCount
        queue.qualityOfService = .utility
        return queue
    }()

    /// One per active processor core: see ``maxConcurrentImageDecodeCount``.
    public static let defaultMaxConcurrentImageDecodeCount = max(ProcessInfo.processInfo.activeProcessorCount, 1)

    /// How many fetch and store operations may run beyond the downloading ones, to decode, scale and encode
    /// (``operationQueue`` says how it sets the queue's width). Default
    /// ``defaultMaxConcurrentImageDecodeCount``, so a pipeline on a many-core server decodes on every core
    /// while the download limit stays TIP's; a value below 1 resets it to the default.
    public var maxConcurrentImageDecodeCount: Int {
        get { decodeSlots.withLock { $0 } }
        set {
            decodeSlots.withLock { $0 = newValue < 1 ? Self.defaultMaxConcurrentImageDecodeCount : newValue }
            updateOperationQueueWidth()
        }
    }

    /// The scheduler time slice a fetch's thread asks Linux for while it decodes an image it has whole, from a
    /// download or a cache (kernels 6.12 and later; the kernel takes 100 microseconds to 100 milliseconds).
    /// The scans shown while a download runs keep the kernel's slice: they come on slow links, where no core
    /// waits for them. Default `nil`: threads keep the kernel's slice.
    ///
    /// Worth trying on a machine with many cores that fetches at full speed: there a thread that picks up a
    /// download's bytes or a callback can wait for a decoding thread's whole slice (about 3 ms from 8 cores on)
    /// while other cores idle. 100 microseconds lets it in sooner, at the price of more context switches
    /// (docs/benchmarks.md measures both sides).
    public var decodeTimeSlice: Duration? {
        get { decodeSlice.withLock { $0 } }
        set { decodeSlice.withLock { $0 = newValue } }
    }

    /// Slots a fetch's decode of an image it has whole (from a download or a cache) takes for the decode and the
    /// scaling; `nil` (the default): decodes start as soon as their bytes are in, up to the operation queue's
    /// width. The scans shown while a download runs take none.
    ///
    /// Give one where threads that wake for short work must find a core soon beside decodes: a server whose
    /// event loops answer requests, for instance. Take the same slots around your own CPU-heavy work (an
    /// encoder's, say), so that it and the decodes together run no more at once than there are slots.
    public var processingSlots: ProcessingSlots? {
        get { chosenProcessingSlots.withLock { $0 } }
        set { chosenProcessingSlots.withLock { $0 = newValue } }
    }

    /// Runs `body` in one of ``processingSlots``, or at once without them.
    func withProcessingSlot<T>(_ body: () throws -> T) rethrows -> T {
        guard let slots = processingSlots else { return try body() }
        return try slots.withSlot(body)
    }

    private func updateOperationQueueWidth() {
        let downloads = maxConcurrentImagePipelineDownloadCount
        operationQueue.maxConcurrentOperationCount = downloads < 0
            ? OperationQueue.defaultMaxConcurrentOperationCount
            : downloads + maxConcurrentImageDecodeCount
    }

    /// Where delegate callbacks and completions are delivered: a serial queue. Default `DispatchQueue.main`.
    /// A fetch started on it completes before returning when the rendered cache has the image.
    public var delegateQueue: DispatchQueue {
        get { callbackQueue.withLock { $0 } }
        set {
            newValue.setSpecific(key: DelegateQueueDiagnostics.delegateQueueKey, value: ObjectIdentifier(newValue))
            callbackQueue.withLock { $0 = newValue }
        }
    }

    /// Whether the calling code runs on ``delegateQueue``.
    var isOnDelegateQueue: Bool { DispatchQueue.getSpecific(key: DelegateQueueDiagnostics.delegateQueueKey) == ObjectIdentifier(delegateQueue) }

    /// The downloader every pipeline on this configuration fetches with (TIP's download provider). Default
    /// ``URLSessionDownloader``; the `ImagePipelineHTTPClient` product has a faster one. Setting it starts
    /// a new ``downloadCoordinator``: downloads already running finish on the old one.
    public var imageDownloader: any ImageDownloader {
        get { downloadCoordinator.downloader }
        set {
            let limit = maxConcurrentImagePipelineDownloadCount
            coordinator.withLock {
                $0 = DownloadCoordinator(downloader: newValue, maxConcurrentDownloads: limit, configuration: self)
            }
        }
    }

    /// Shares and schedules the downloads of every pipeline on this configuration.
    public var downloadCoordinator: DownloadCoordinator {
        coordinator.withLock { current in
            if let current { return current }
            let made = DownloadCoordinator(downloader: URLSessionDownloader(), configuration: self)
            current = made
            return made
        }
    }

    /// How many downloads run at once (TIP's default 4): negative is unlimited, 0 starts none. For images from
    /// one host, the downloader's connections per host bound it too (``URLSessionDownloader`` opens 6,
    /// `HTTPClientDownloader` 8): raise them with it, or the downloads beyond wait for a connection.
    public var maxConcurrentImagePipelineDownloadCount: Int {
        get { coordinator.withLock { $0?.maxConcurrentDownloads } ?? 4 }
        set {
            downloadCoordinator.maxConcurrentDownloads = newValue
            updateOperationQueueWidth()
        }
    }

    /// The most bytes of decoded pixels the fetches' decodes may hold at once, all pipelines on this
    /// configuration together (each decode also stays within its own ``DecodingLimits``). A decode that would
    /// pass it waits for others to finish, up to 30 seconds, then fails with
    /// ``ImageCodecError/Limit/decodeMemoryBudget(_:)``; so does one larger than the whole budget. As with the
    /// cache limits, a negative value resets it to ``defaultMaxBytesForDecodesInFlight``.
    public var maxBytesForDecodesInFlight: Int {
        get { decodeMemoryBudget.capacity }
        set { decodeMemoryBudget.capacity = newValue < 0 ? Self.defaultMaxBytesForDecodesInFlight : newValue }
    }

    /// The bytes of decoded pixels that running decodes and the progressive sessions of downloading fetches
    /// hold now, all pipelines on this configuration together: what ``maxBytesForDecodesInFlight`` bounds. A
    /// fetch gives its share back when it ends, whether or not its operation is still referenced.
    public var totalBytesForDecodesInFlight: Int { decodeMemoryBudget.inUse }

    /// The most ``totalBytesForDecodesInFlight`` has been since this configuration was made: the decode working
    /// memory (pixels, and a progressive JPEG's coefficients) a workload needed at its peak.
    public var peakBytesForDecodesInFlight: Int { decodeMemoryBudget.peakInUse }

    /// The budget ``maxBytesForDecodesInFlight`` sets.
    let decodeMemoryBudget = DecodeMemoryBudget(capacity: GlobalConfiguration.defaultMaxBytesForDecodesInFlight)

    /// The default ``maxBytesForDecodesInFlight``: a quarter of the physical memory, within 256 MiB to 1 GiB.
    public static let defaultMaxBytesForDecodesInFlight: Int = {
        let physical = Int(clamping: ProcessInfo.processInfo.physicalMemory)
        return min(max(physical / 4, 256 << 20), 1 << 30)
    }()

    /// The bounds of every download a fetch starts: response size, total deadline, minimum transfer rate,
    /// timeouts and redirects. ``DownloadLimits``'s defaults unless set; read when a download starts.
    public var downloadLimits: DownloadLimits {
        get { currentDownloadLimits.withLock { $0 } }
        set { currentDownloadLimits.withLock { $0 = newValue } }
    }

    /// The `Accept` header every fetch's download sends, in the order of preference, for servers that choose an
    /// image's format by it (`"image/avif, image/webp;q=0.9, image/jpeg;q=0.8"`, say). `nil` (the default)
    /// sends ``CodecCatalogue/acceptHeaderValue``: every format the codecs decode. A download request that sets
    /// its own `Accept` (through a hydration) keeps it. Read when a download starts.
    public var acceptHeaderValue: String? {
        get { currentAcceptHeader.withLock { $0 } }
        set { currentAcceptHeader.withLock { $0 = newValue } }
    }

    /// The header fields a fetch's download request starts with.
    var downloadHeaders: DownloadHeaders {
        acceptHeaderValue.map { ["Accept": $0] } ?? DownloadHeaders()
    }

    /// A configuration with TIP's defaults and caches of its own.
    public init() {
        let ratio = Self.defaultMaxRatioSizeOfCacheEntry
        renderedPool = CachePool(
            limits: .init(maxBytes: Self.defaultMaxBytesForAllRenderedCaches,
                          maxCount: Self.defaultMaxCountForAllRenderedCaches, maxEntryRatio: ratio),
            capsEntries: false)
        memoryPool = CachePool(
            limits: .init(maxBytes: Self.defaultMaxBytesForAllMemoryCaches,
                          maxCount: Self.defaultMaxCountForAllMemoryCaches, maxEntryRatio: ratio))
        diskPool = DiskCachePool(
            limits: .init(maxBytes: Self.defaultMaxBytesForAllDiskCaches,
                          maxCount: Self.defaultMaxCountForAllDiskCaches, maxEntryRatio: ratio),
            problems: diskProblems)
        diskProblems.connect { [weak self] problem in self?.report(problem) }
        DispatchQueue.main.setSpecific(key: DelegateQueueDiagnostics.delegateQueueKey, value: ObjectIdentifier(DispatchQueue.main))
    }

    deinit {
        gaugeSampler.withLock { $0?.timer.cancel() }
    }

    // MARK: - Problems

    /// Hears about non-fatal anomalies (``ImagePipelineProblem``). Held strongly, as TIP does.
    public var problemObserver: (any ProblemObserver)? {
        get { observer.withLock { $0 } }
        set { observer.withLock { $0 = newValue } }
    }

    /// Reports `problem` to the observer, on the calling thread, counts it (``PipelineMetricLabels/problems``),
    /// and logs it at `warning` (its name only: problems carry identifiers, which are often full URLs, and
    /// those are logged at `debug`).
    func report(_ problem: ImagePipelineProblem) {
        recordProblem(problem)
        // Structured: the kind and the details as metadata, the identifier (often a full URL) at debug only.
        var metadata: Logger.Metadata = ["problem": .string(problem.kind), "detail": .string(problem.name)]
        if problem.needsOperator {
            log(.warning, "pipeline problem", metadata: metadata)
        }
        if let identifier = problem.identifier { metadata["identifier"] = .string(identifier) }
        log(.debug, "pipeline problem", metadata: metadata)
        problemObserver?.problemWasEncountered(problem)
    }

    // MARK: - Logging and observers

    /// Where the fetches' spans go (swift-distributed-tracing): by default `InstrumentationSystem.tracer`, read
    /// at each fetch, so bootstrapping a tracer later still takes effect; until one is bootstrapped (while this
    /// is the no-op tracer), fetches build no spans at all. Each fetch that runs makes an `image-pipeline.fetch`
    /// span (a child of the caller's `ServiceContext`), with an `image-pipeline.source` child per source step and
    /// children for its decode and stores. A fetch answered synchronously from the rendered cache makes none.
    public var tracer: any Tracer {
        get { chosenTracer.withLock { $0 } ?? InstrumentationSystem.tracer }
        set { chosenTracer.withLock { $0 = newValue } }
    }

    /// Where the library logs (swift-log). `nil`, the default, logs nothing; the library never bootstraps
    /// `LoggingSystem`. Routine events log at `debug` with structured metadata (`pipeline`, `identifier`, …);
    /// only problems an operator should act on (``ImagePipelineProblem/needsOperator``) log at `warning`. Full
    /// URLs and identifiers are logged at `debug` only.
    public var logger: Logger? {
        get { currentLogger.withLock { $0 } }
        set { currentLogger.withLock { $0 = newValue } }
    }

    func log(_ level: Logger.Level, _ message: @autoclosure () -> Logger.Message,
             metadata: @autoclosure () -> Logger.Metadata = [:]) {
        guard let logger, logger.logLevel <= level else { return }
        logger.log(level: level, message(), metadata: metadata())
    }

    /// Adds an observer of every pipeline on this configuration, held weakly (TIP's
    /// `addImagePipelineObserver:`). Adding one twice has no effect.
    public func addObserver(_ observer: any ImagePipelineObserver) {
        pipelineObservers.withLock { observers in
            observers.removeAll { $0.observer == nil }
            guard !observers.contains(where: { $0.observer === observer }) else { return }
            observers.append(WeakObserver(observer: observer))
        }
    }

    /// Stops telling `observer` about pipelines.
    public func removeObserver(_ observer: any ImagePipelineObserver) {
        pipelineObservers.withLock { $0.removeAll { $0.observer == nil || $0.observer === observer } }
    }

    /// The global observers still alive.
    var observers: [any ImagePipelineObserver] {
        pipelineObservers.withLock { $0.compactMap(\.observer) }
    }

    // MARK: - Pipelines

    /// The live pipelines that use this configuration, in identifier order.
    public var pipelines: [ImagePipeline] {
        PipelineRegistry.shared.livePipelines.filter { $0.configuration === self }
    }

    /// What every live pipeline on this configuration holds, by pipeline identifier (TIP's global `inspect:`).
    /// Reads the disk indexes: call it off the delegate queue.
    public func inspectAllPipelines() -> [String: ImagePipelineInspection] {
        Dictionary(uniqueKeysWithValues: pipelines.map { ($0.identifier, $0.inspect()) })
    }
}
