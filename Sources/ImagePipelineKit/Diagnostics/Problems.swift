import PipelineLocking

/// A non-fatal anomaly (TIP's "problems"): the operation goes on, and the problem observer hears about it.
public enum ImagePipelineProblem: Sendable, Equatable {
    /// A disk entry's file was missing, truncated or replaced behind the index's back (a crash between a
    /// file write and its index commit, or an outside hand). The entry was removed so a fetch can replace it.
    case diskCacheEntryCorrupt(identifier: String, reason: String)
    /// An image was larger than one disk entry may be (``GlobalConfiguration/maxRatioSizeOfCacheEntry``).
    case imageTooLargeToStoreInDiskCache(identifier: String, bytes: Int)
    /// Writing an entry failed (a full disk, say); the entry that was there before is untouched.
    case diskCacheWriteFailed(identifier: String, error: DiskCacheError)
    /// The pipeline's disk cache could not be opened (its directory or index): the pipeline goes on with
    /// memory and the network, and tries to open it again later (``ImagePipeline/diskCacheUnavailability``).
    case diskCacheUnavailable(pipeline: String, error: DiskCacheError)
    /// A download delivered every byte of the image, then its transport failed (a CDN closing badly, TIP
    /// PR #45). The image is used; the error is only reported.
    case imageDownloadedWithUnnecessaryError(identifier: String, error: DownloadError)
    /// A download completed but its bytes are not an image this pipeline decodes (the fetch fails with
    /// ``FetchErrorCode/couldNotDecodeImage``).
    case imageDownloadedCouldNotBeDecoded(identifier: String, bytes: Int)
    /// Cached bytes did not decode: the entry was removed and the fetch went on to the next source (TIP treated
    /// it as a miss but kept the entry).
    case cachedImageCouldNotBeDecoded(identifier: String, source: ImageLoadSource)
    /// A request's target dimensions were negative; the fetch went on without a target.
    case invalidTargetDimensions(identifier: String, dimensions: PixelSize)
    /// A call to the pipeline's ``SharedImageCache`` failed or timed out (the engine is down, stalled, refuses
    /// the password, or its circuit breaker is open): fetches go on without it. Reported when such an outage
    /// begins, not for every call in it.
    case sharedCacheUnavailable(reason: String)
    /// The shared cache's circuit breaker opened after repeated failures: fetches skip it for `retryAfter`,
    /// then it is tried again (``SharedCacheCircuitOpenError``).
    case sharedCacheCircuitOpen(retryAfter: Duration)
    /// A shared-cache value failed a check (corrupt, truncated, unsigned, signed by another fleet, filed under
    /// another key): it was deleted, not served, and the image was fetched elsewhere.
    case sharedCacheValueRejected(identifier: String, reason: String)

    /// Whether an operator should hear of it: the caches losing or refusing data (a corrupt entry, a failed
    /// write, a disk cache or a fleet tier that cannot be used, a value that failed its check). The others are
    /// the ordinary life of a pipeline on the internet (a server that ended a response badly after its last
    /// byte, an image too large to keep, a caller's odd target) and log at `debug`.
    public var needsOperator: Bool {
        switch self {
        case .diskCacheEntryCorrupt, .diskCacheWriteFailed, .diskCacheUnavailable, .cachedImageCouldNotBeDecoded,
             .sharedCacheUnavailable, .sharedCacheCircuitOpen, .sharedCacheValueRejected:
            true
        case .imageTooLargeToStoreInDiskCache, .imageDownloadedWithUnnecessaryError, .imageDownloadedCouldNotBeDecoded,
             .invalidTargetDimensions:
            false
        }
    }

    /// The identifier (often the full URL) the problem is about, if it is about one image.
    var identifier: String? {
        switch self {
        case .diskCacheEntryCorrupt(let identifier, _), .imageTooLargeToStoreInDiskCache(let identifier, _),
             .diskCacheWriteFailed(let identifier, _), .imageDownloadedWithUnnecessaryError(let identifier, _),
             .imageDownloadedCouldNotBeDecoded(let identifier, _), .cachedImageCouldNotBeDecoded(let identifier, _),
             .invalidTargetDimensions(let identifier, _), .sharedCacheValueRejected(let identifier, _):
            identifier
        case .diskCacheUnavailable, .sharedCacheUnavailable, .sharedCacheCircuitOpen:
            nil
        }
    }

    /// The problem's kind alone (`diskCacheWriteFailed`): the `problem` dimension of the problems metric.
    public var kind: String {
        String(name.prefix { $0 != " " })
    }

    /// A stable name for logs, without the identifier (which is often a full URL).
    public var name: String {
        switch self {
        case .diskCacheEntryCorrupt: "diskCacheEntryCorrupt"
        case .imageTooLargeToStoreInDiskCache: "imageTooLargeToStoreInDiskCache"
        case .diskCacheWriteFailed(_, let error): "diskCacheWriteFailed (\(error))"
        case .diskCacheUnavailable(_, let error): "diskCacheUnavailable (\(error))"
        case .imageDownloadedWithUnnecessaryError(_, let error): "imageDownloadedWithUnnecessaryError (\(error.code))"
        case .imageDownloadedCouldNotBeDecoded: "imageDownloadedCouldNotBeDecoded"
        case .cachedImageCouldNotBeDecoded(_, let source): "cachedImageCouldNotBeDecoded (\(source))"
        case .invalidTargetDimensions: "invalidTargetDimensions"
        case .sharedCacheUnavailable: "sharedCacheUnavailable"
        case .sharedCacheCircuitOpen: "sharedCacheCircuitOpen"
        case .sharedCacheValueRejected: "sharedCacheValueRejected"
        }
    }
}

extension ImagePipelineProblem: CustomStringConvertible {
    /// The kind with what it concerns (identifier or pipeline) and why: for people, and for logs at `debug`.
    public var description: String {
        switch self {
        case .diskCacheEntryCorrupt(let identifier, let reason): "diskCacheEntryCorrupt: \(identifier): \(reason)"
        case .imageTooLargeToStoreInDiskCache(let identifier, let bytes):
            "imageTooLargeToStoreInDiskCache: \(identifier): \(bytes) bytes"
        case .diskCacheWriteFailed(let identifier, let error): "diskCacheWriteFailed: \(identifier): \(error)"
        case .diskCacheUnavailable(let pipeline, let error): "diskCacheUnavailable: pipeline \(pipeline): \(error)"
        case .imageDownloadedWithUnnecessaryError(let identifier, let error):
            "imageDownloadedWithUnnecessaryError: \(identifier): \(error)"
        case .imageDownloadedCouldNotBeDecoded(let identifier, let bytes):
            "imageDownloadedCouldNotBeDecoded: \(identifier): \(bytes) bytes"
        case .cachedImageCouldNotBeDecoded(let identifier, let source):
            "cachedImageCouldNotBeDecoded: \(identifier) from \(source)"
        case .invalidTargetDimensions(let identifier, let dimensions): "invalidTargetDimensions: \(identifier): \(dimensions)"
        case .sharedCacheUnavailable(let reason): "sharedCacheUnavailable: \(reason)"
        case .sharedCacheCircuitOpen(let retryAfter): "sharedCacheCircuitOpen: retries after \(retryAfter)"
        case .sharedCacheValueRejected(let identifier, let reason): "sharedCacheValueRejected: \(identifier): \(reason)"
        }
    }
}

/// Hears about problems (TIP's `TIPProblemObserver`). Called on the thread that met the problem.
public protocol ProblemObserver: AnyObject, Sendable {
    func problemWasEncountered(_ problem: ImagePipelineProblem)
}

/// Carries problems from a layer that must not know the configuration (the disk caches) to whoever reports
/// them. Until connected, problems are dropped. Thread-safe; the sink runs on the reporting thread.
final class ProblemRelay: Sendable {
    private let sink = Locked<(@Sendable (ImagePipelineProblem) -> Void)?>(nil)

    /// Sends every later problem to `sink`.
    func connect(_ sink: @escaping @Sendable (ImagePipelineProblem) -> Void) {
        self.sink.withLock { $0 = sink }
    }

    func report(_ problem: ImagePipelineProblem) {
        sink.withLock { $0 }?(problem)
    }
}
