import Foundation

/// A read-only source of images by URL, tried after the disk caches (TIP's `TIPImageAdditionalCache`).
/// Nothing is ever written to it, and what it returns is not stored in the memory or disk caches.
public protocol AdditionalImageCache: Sendable {
    /// The image for `url`, or `nil`. Called off the delegate queue.
    func image(for url: URL) async -> ImageContainer?
}

extension ImagePipeline {
    /// An operation for `request`, reporting to `delegate` (held weakly: releasing it cancels the fetch).
    /// Hand it to ``fetchImage(with:)`` to run it.
    public func operation(with request: any FetchRequest, context: (any Sendable)? = nil,
                          delegate: (any FetchDelegate)?) -> FetchOperation {
        FetchOperation(request: request, pipeline: self, context: context, delegate: delegate, holdsDelegateStrongly: false)
    }

    /// An operation for `request` that calls `completion` once, on the delegate queue, with the final image or
    /// the error (TIP's block API). Hand it to ``fetchImage(with:)`` to run it.
    public func operation(with request: any FetchRequest, context: (any Sendable)? = nil,
                          completion: @escaping @Sendable (Result<FetchResult, FetchError>) -> Void) -> FetchOperation {
        FetchOperation(request: request, pipeline: self, context: context, delegate: CompletionFetchDelegate(completion),
                       holdsDelegateStrongly: true)
    }

    /// Runs `operation` (TIP's `fetchImageWithOperation:`).
    ///
    /// Called on the delegate queue with a request the rendered cache already holds at its target sizing
    /// (and the memory source allowed), the fetch completes before this returns: the delegate hears
    /// `didStart` and `didLoadFinalImage` synchronously (TIP b3). Otherwise the operation goes on
    /// ``GlobalConfiguration/operationQueue``.
    /// - Precondition: `operation` was made by this pipeline and not run before; another pipeline's
    ///   operation fails with ``FetchErrorCode/invalidRequest`` instead of running.
    public func fetchImage(with operation: FetchOperation) {
        operation.shared.withLock { $0.enqueuedAt = Date() }
        guard operation.pipeline === self else {
            operation.queue.async { operation._queue_fail(FetchError(.invalidRequest)) }
            return
        }
        if configuration.isOnDelegateQueue, completeFromRenderedCache(operation) { return }
        operation.shared.withLock { $0.isInOperationQueue = true }
        waitingFetches.add(operation)
        configuration.operationQueue.addOperation(operation)
    }

    /// The synchronous rendered-cache path (b3); true when `operation` finished here.
    private func completeFromRenderedCache(_ operation: FetchOperation) -> Bool {
        guard let (result, isDirty) = renderedResult(for: operation, countingMiss: true) else { return false }
        if isDirty {
            // A stale rendition: shown now as a preview, before the fetch even starts; the fetch then runs (b3).
            operation.delegate?.fetchOperation(operation, didLoadDirtyPreviewImage: result)
            return false
        }
        operation.completeSynchronously(with: result)
        return true
    }

    /// `operation`'s rendition in the rendered cache (b3's rules) as a result, and whether it is dirty; `nil` when
    /// the request may not read the rendered cache or it holds no such rendition (then a rendered-layer miss
    /// in the metrics when `countingMiss`).
    func renderedResult(for operation: FetchOperation, countingMiss: Bool = false) -> (result: FetchResult, isDirty: Bool)? {
        guard let lookup = operation.renderedLookup else { return nil }
        guard let hit = renderedCache.image(for: lookup.identifier, target: lookup.target,
                                            transformerIdentifier: lookup.transformerIdentifier) else {
            if countingMiss { configuration.recordRenderedMiss(of: identifier) }
            return nil
        }
        var result = FetchResult(image: hit.image, source: .memoryCache, url: operation.request.url,
                                 originalDimensions: hit.sourceDimensions, isPlaceholder: false, identifier: lookup.identifier)
        result.imageWasTransformed = lookup.transformerIdentifier != nil
        return (result, hit.isDirty)
    }
}

/// What a request's rendered-cache lookup matches on (b3): identifier, target sizing and transformer.
struct RenderedLookup: Hashable, Sendable {
    var identifier: String
    var target: TargetSizing
    var transformerIdentifier: String?

    /// `nil` when `request` may not read the rendered cache: the memory source not allowed, no identifier, no
    /// positive target with a scaling mode, or a transformer without an identifier (a6).
    init?(_ request: any FetchRequest) {
        let identifier = request.resolvedIdentifier
        guard request.loadingSources.contains(.memoryCache), !identifier.isEmpty, request.targetSizing.scalesToTarget,
              request.transformer == nil || request.transformer?.identifier != nil else { return nil }
        self.identifier = identifier
        target = request.targetSizing
        transformerIdentifier = request.transformer?.identifier
    }
}

extension FetchOperation {
    /// Finishes without ever running: a rendered-cache hit on the delegate queue (the caller is on it).
    func completeSynchronously(with result: FetchResult) {
        let metrics = FetchMetricsRecorder.synchronousHit()
        shared.withLock {
            $0.state = .succeeded
            $0.finalResult = result
            $0.progress = 1
            $0.startedAt = Date()
            $0.metrics = metrics
        }
        pipeline.configuration.recordFetch(of: pipeline.identifier, metrics: metrics, outcome: .success)
        if let delegate {
            delegate.fetchOperationDidStart(self)
            delegate.fetchOperation(self, didLoadFinalImage: result)
        }
        markFinished()
    }
}

/// The block API's delegate: one completion, held strongly by its operation until it finished.
final class CompletionFetchDelegate: FetchDelegate {
    private let completion: @Sendable (Result<FetchResult, FetchError>) -> Void

    init(_ completion: @escaping @Sendable (Result<FetchResult, FetchError>) -> Void) {
        self.completion = completion
    }

    func fetchOperation(_ operation: FetchOperation, didLoadFinalImage result: FetchResult) {
        completion(.success(result))
    }

    func fetchOperation(_ operation: FetchOperation, didFailToLoadFinalImageWith error: FetchError) {
        completion(.failure(error))
    }
}
