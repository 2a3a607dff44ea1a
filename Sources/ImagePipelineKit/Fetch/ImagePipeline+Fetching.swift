import Foundation

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
    /// `didStart` and `didLoadFinalImage` synchronously, as in TIP. Otherwise the operation goes on
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

    /// The synchronous rendered-cache path: true when `operation` finished here.
    private func completeFromRenderedCache(_ operation: FetchOperation) -> Bool {
        guard let (result, isDirty) = renderedResult(for: operation.plan, countingMiss: true) else { return false }
        if isDirty {
            // A stale rendition: shown now as a preview, before the fetch even starts; the fetch then runs.
            operation.delegate?.fetchOperation(operation, didLoadDirtyPreviewImage: result)
            return false
        }
        operation.completeSynchronously(with: result)
        return true
    }

    /// The rendition `plan` asks the rendered cache for, as a result, and whether it is dirty; `nil` when the
    /// fetch may not read the rendered cache or it holds no such rendition (then a rendered-cache miss in the
    /// metrics when `countingMiss`).
    func renderedResult(for plan: FetchPlan, countingMiss: Bool = false) -> (result: FetchResult, isDirty: Bool)? {
        guard let lookup = plan.keys.renderedLookup else { return nil }
        guard let hit = caches.renderedImage(lookup) else {
            if countingMiss { configuration.recordRenderedMiss(of: identifier) }
            return nil
        }
        // The URL the rendition's image was loaded from: another URL's image of this identifier may answer.
        let result = FetchResult(image: hit.image, source: .memoryCache, url: hit.url ?? plan.url,
                                 originalDimensions: hit.sourceDimensions, isPlaceholder: false, identifier: lookup.identifier,
                                 imageWasTransformed: lookup.transformerIdentifier != nil)
        return (result, hit.isDirty)
    }

    /// The rendition `plan` asks the rendered cache for, unless it is marked dirty (stale: a preview, not a final
    /// image): what a fetch takes instead of decoding.
    func cleanRendition(for plan: FetchPlan) -> FetchResult? {
        guard let (result, isDirty) = renderedResult(for: plan), !isDirty else { return nil }
        return result
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
        pipeline.configuration.recordFetch(of: pipeline.identifier, identifier: plan.identifier, metrics: metrics,
                                           outcome: .success)
        if let delegate {
            if delegateCallbacks.contains(.start) { delegate.fetchOperationDidStart(self) }
            delegate.fetchOperation(self, didLoadFinalImage: result)
        }
        markFinished()
    }
}
