import Foundation

/// The bounds that keep one request, and the whole service, finite. Each refusal has its status
/// (``ServiceError``).
public struct ServiceLimits: Sendable, Equatable {
    /// Longest request path (414 beyond it).
    public var maxPathBytes = 2_048
    /// Largest source download (413 beyond it; the download stops there).
    public var maxSourceBytes = 32 << 20
    /// Most pixels a source may declare (413 beyond it; refused before any pixel is decoded).
    public var maxSourcePixels = 50_000_000
    /// Most pixels of an output (400 beyond it).
    public var maxOutputPixels = 16_000_000
    /// Time from a request's arrival to its answer, the source's download included (504 beyond it).
    public var requestDeadline: Duration = .seconds(10)
    /// Renders running at once; the others wait in line. A render is a source download and a decode: enough of
    /// them run to keep the cores busy while some wait for their bytes, and no more, since more only lengthens
    /// every render. The default is four per core.
    public var maxRendersInFlight = 4 * ProcessInfo.processInfo.activeProcessorCount
    /// Decodes, edits and encodes running at once, of all renders together (``ProcessingSlots``); a render
    /// whose source is in waits for one. The default, one per core, leaves no core with a queue of them, so an
    /// event loop that wakes to answer a cached thumbnail or to refuse a request finds a core at once.
    /// ``ImageServicePipelines`` gives its configuration these slots; a service on pipelines of your own sets
    /// their configuration's `processingSlots`.
    public var maxRendersProcessing = ProcessInfo.processInfo.activeProcessorCount
    /// Renders waiting for a slot; past it, a request is answered 503 at once. The default, eight per core, keeps
    /// an accepted request's wait near the time a few renders take instead of growing with the load.
    public var maxRendersWaiting = 8 * ProcessInfo.processInfo.activeProcessorCount
    /// The `Retry-After` of a 503.
    public var retryAfterSeconds = 1

    public init() {}
}
