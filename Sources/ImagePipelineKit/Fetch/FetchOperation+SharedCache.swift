import Foundation

// The shared-cache step of a fetch: ask the fleet's cache; on a miss take the fill lease (this fetch then
// downloads and writes through), or wait for the process that holds it. Asking runs in a task off the
// operation's queue; its answer comes back to the queue. Every `_queue_` method runs on the operation's queue.
extension FetchOperation {
    /// What the shared-cache step came to, off the queue.
    enum SharedCacheAnswer: Sendable {
        /// The image, after waiting `waited` seconds for another process's download (`nil`: no wait).
        case hit(SharedCacheValue, waited: TimeInterval?)
        /// Not there: the fetch goes on holding `lease` (it downloads the image and writes it through), or none.
        case miss(lease: SharedCacheLease?, waited: TimeInterval?, gaveUpWaiting: Bool)
    }

    func _queue_loadFromSharedCache() -> SourceOutcome {
        // Placeholders never leave the process; a fetch that may not download only reads.
        guard plan.sources.contains(.sharedCache), !plan.isPlaceholder, let access = pipeline.sharedCacheIfAny else {
            return .miss
        }
        _queue_begin(.sharedCache, state: .loadingFromSharedCache)
        let key = access.key(for: plan.keys)
        let url = plan.url
        let identifier = plan.identifier
        let mayDownload = plan.sources.contains(.network)
        let isCancelled: @Sendable () -> Bool = { [weak self] in self?.isCancelled ?? true }
        Task {
            let answer = await Self.askSharedCache(access, key: key, url: url, identifier: identifier,
                                                   mayDownload: mayDownload, isCancelled: isCancelled)
            queue.async { [self] in _queue_sharedCacheAnswered(answer, access: access) }
        }
        return .waiting
    }

    /// Asks for the value; on a miss takes the fill lease, or waits for its holder's value (asking again every
    /// poll interval, and taking the lease itself when it comes free) for at most twice the lease's time to live.
    private static func askSharedCache(_ access: SharedCacheAccess, key: SharedCacheKey, url: URL, identifier: String,
                                       mayDownload: Bool, isCancelled: @escaping @Sendable () -> Bool) async
        -> SharedCacheAnswer {
        if let value = await access.value(for: key, identifier: identifier), value.url == url {
            return .hit(value, waited: nil)
        }
        // Another fetch of this process downloads it: the coordinator shares that download.
        guard mayDownload, !access.holdsLeaseHere(for: key) else { return .miss(lease: nil, waited: nil, gaveUpWaiting: false) }
        let started = ContinuousClock.now
        // Two lease lifetimes: when the holder dies, its lease expires and one waiter takes it over; the others
        // then wait for that one rather than all going to the origin at the first lease's expiry.
        let deadline = started + access.configuration.leaseTimeToLive * 2
        var waited: TimeInterval? { (ContinuousClock.now - started).seconds }
        var isFirstTry = true
        while ContinuousClock.now < deadline, !isCancelled() {
            if !isFirstTry {
                try? await Task.sleep(for: access.configuration.pollInterval)
                if let value = await access.value(for: key, identifier: identifier), value.url == url {
                    return .hit(value, waited: waited)
                }
            }
            switch await access.acquireLease(for: key) {
            case .acquired(let lease):
                // The holder before may have written the value and given the lease back between the last look
                // and this one: a second look costs one round trip, a second download costs the origin.
                if let value = await access.value(for: key, identifier: identifier), value.url == url {
                    access.release(lease)
                    return .hit(value, waited: isFirstTry ? nil : waited)
                }
                return .miss(lease: lease, waited: isFirstTry ? nil : waited, gaveUpWaiting: false)
            case .unavailable: return .miss(lease: nil, waited: isFirstTry ? nil : waited, gaveUpWaiting: false)
            case .heldElsewhere: isFirstTry = false
            }
        }
        return .miss(lease: nil, waited: waited, gaveUpWaiting: !isCancelled())
    }

    private func _queue_sharedCacheAnswered(_ answer: SharedCacheAnswer, access: SharedCacheAccess) {
        switch answer {
        case .hit(let value, let waited):
            if let waited {
                metricsRecorder.noteSharedCacheLeaseWait(waited)
                access.record(.leaseWait)
            }
            guard !_queue_abortIfNeeded() else { return }
            access.record(.hit)
            _queue_deliverShared(value, access: access)
        case .miss(let lease, let waited, let gaveUpWaiting):
            if let waited {
                metricsRecorder.noteSharedCacheLeaseWait(waited)
                access.record(.leaseWait)
            }
            if gaveUpWaiting { access.record(.leaseFallback) }
            access.record(.miss)
            sharedCacheLease = lease
            guard !_queue_abortIfNeeded() else { return }
            _queue_continue(with: .miss)
        }
    }

    /// Decodes a shared-cache image as a disk hit would be, keeps its bytes in memory before the delegate hears
    /// of it and on disk after, and succeeds with it. Bytes that do not decode are deleted from the shared cache.
    private func _queue_deliverShared(_ value: SharedCacheValue, access: SharedCacheAccess) {
        let cached = plan.cachedImage(value.data, dimensions: value.dimensions, isAnimated: value.isAnimated)
        _queue_decodeShared(cached.data) { [self] outcome in
            guard case .success(let decoded) = outcome else {
                pipeline.configuration.report(.cachedImageCouldNotBeDecoded(identifier: plan.identifier, source: .sharedCache))
                access.remove(identifier: plan.identifier)
                return _queue_continue(with: .miss)
            }
            let (result, keepRendition) = _queue_finalResult(decoded, of: cached, source: .sharedCache)
            _queue_succeed(result, storing: cached, decoded: decoded, afterStore: keepRendition.map { [$0] } ?? [])
        }
    }

    /// The write-through of a downloaded image to the shared cache, a step after delivery; it gives this fetch's
    /// fill lease back once the value is there. Taken now, so that finishing the fetch does not give the lease
    /// back first. `nil` without a shared cache, and for placeholders (partial images never get here).
    func _queue_sharedCacheWriteThrough(of cached: CachedImageData, type: ImageType?) -> AfterDeliveryStep? {
        let lease = sharedCacheLease
        sharedCacheLease = nil
        guard let access = pipeline.sharedCacheIfAny, !cached.isPlaceholder else {
            if let lease { pipeline.sharedCacheIfAny?.release(lease) }
            return nil
        }
        let value = SharedCacheValue(data: cached.data, url: cached.url, dimensions: cached.dimensions,
                                     contentType: type?.mimeType, isAnimated: cached.isAnimated,
                                     eTag: cached.httpMetadata?.entityTag, lastModified: cached.httpMetadata?.lastModified,
                                     timeToLive: cached.timeToLive)
        return .writeThrough(value, key: access.key(for: plan.keys), access: access, lease: lease)
    }

    /// A fetch that ends still holding the fill lease (it failed, was cancelled, or joined a download another
    /// fetch owned) gives it back, so that a waiting process takes it at once rather than after its time to live.
    func _queue_releaseSharedCacheLease() {
        guard let lease = sharedCacheLease else { return }
        sharedCacheLease = nil
        pipeline.sharedCacheIfAny?.release(lease)
    }
}
