import Foundation

// The shared-cache step of a fetch: the pipeline's caches look in the fleet's cache and, on a miss, take the fill
// lease (this fetch then downloads and writes through) or wait for the process that holds it. That runs in a
// task off the operation's queue; its answer comes back to the queue. Every `_queue_` method runs on the
// operation's queue.
extension FetchOperation {
    func _queue_loadFromSharedCache() -> SourceOutcome {
        // Placeholders never leave the process; a fetch that may not download only reads.
        guard plan.sources.contains(.sharedCache), !plan.isPlaceholder, pipeline.caches.sharedCache != nil else {
            return .miss
        }
        _queue_begin(.sharedCache, state: .loadingFromSharedCache)
        let caches = pipeline.caches
        let (identifier, url) = (plan.identifier, plan.url)
        let mayDownload = plan.sources.contains(.network)
        let isCancelled: @Sendable () -> Bool = { [weak self] in self?.isCancelled ?? true }
        Task {
            let lookup = await caches.lookUpShared(identifier: identifier, url: url, mayDownload: mayDownload,
                                                   isCancelled: isCancelled)
            queue.async { [self] in _queue_sharedCacheAnswered(lookup ?? .miss(lease: nil, waited: nil, gaveUpWaiting: false)) }
        }
        return .waiting
    }

    private func _queue_sharedCacheAnswered(_ lookup: SharedCacheFill) {
        switch lookup {
        case .hit(let value, let waited):
            if let waited { metricsRecorder.noteSharedCacheLeaseWait(waited) }
            guard !_queue_abortIfNeeded() else { return }
            _queue_deliverShared(value)
        case .miss(let lease, let waited, _):
            if let waited { metricsRecorder.noteSharedCacheLeaseWait(waited) }
            sharedCacheLease = lease
            guard !_queue_abortIfNeeded() else { return }
            _queue_continue(with: .miss)
        }
    }

    /// Decodes a shared-cache image as a disk hit would be, keeps its bytes in memory before the delegate hears
    /// of it and on disk after, and succeeds with it. Bytes that do not decode are deleted from the shared cache.
    private func _queue_deliverShared(_ value: SharedCacheValue) {
        let cached = plan.cachedImage(value.data, dimensions: value.dimensions, isAnimated: value.isAnimated)
        _queue_decodeShared(cached.data) { [self] outcome in
            guard case .success(let decoded) = outcome else {
                pipeline.configuration.report(.cachedImageCouldNotBeDecoded(identifier: plan.identifier, source: .sharedCache))
                pipeline.caches.forgetUndecodableShared(identifier: plan.identifier)
                return _queue_continue(with: .miss)
            }
            let (result, keepRendition) = _queue_finalResult(decoded, of: cached, source: .sharedCache)
            _queue_succeed(result, storing: cached, decoded: decoded, afterStore: keepRendition.map { [$0] } ?? [])
        }
    }

    /// A fetch that ends still holding the fill lease (it failed, was cancelled, or joined a download another
    /// fetch owned) gives it back, so that a waiting process takes it at once rather than after its time to live.
    func _queue_releaseSharedCacheLease() {
        guard let lease = sharedCacheLease else { return }
        sharedCacheLease = nil
        pipeline.caches.releaseSharedLease(lease)
    }
}
