import Foundation
import Synchronization
import PipelineLocking

// The source-by-source walk of a fetch (tip-behaviour b2): memory → own disk → other live pipelines' disks →
// additional caches → network. Every method runs on the operation's queue; decoding happens here, never on
// the delegate queue.
extension FetchOperation {
    var identifier: String { request.resolvedIdentifier }
    var sources: LoadingSources { request.loadingSources }

    func _queue_start() {
        guard !_queue_abortIfNeeded() else { return }
        guard !identifier.isEmpty else {
            _queue_fail(FetchError(.invalidRequest))
            return
        }
        if let target = request.targetSizing.dimensions, target.width < 0 || target.height < 0 {
            pipeline.configuration.report(.invalidTargetDimensions(identifier: identifier, dimensions: target))
        }
        _queue_setState(.starting)
        _queue_tellDelegate { $0.fetchOperationDidStart(self) }
        _queue_loadFromMemory()
    }

    // MARK: - Memory

    private func _queue_loadFromMemory() {
        guard !_queue_abortIfNeeded() else { return }
        guard sources.contains(.memoryCache) else { return _queue_loadFromDisk() }
        _queue_setState(.loadingFromMemory)
        metricsRecorder.begin(.memoryCache)
        _queue_tellDelegate { $0.fetchOperation(self, willAttemptToLoadFrom: .memoryCache) }
        // A rendition made while this fetch waited in the operation queue (another fetch of the image finished)
        // needs no decode. TIP reads the rendered cache only before queueing; reading it again here is what
        // lets a hundred queued fetches of one image cost one decode (B13).
        if let (result, isDirty) = pipeline.renderedResult(for: self), !isDirty { return _queue_succeed(result) }
        let entry = pipeline.memoryCache.entry(for: identifier)
        if let complete = entry?.complete {
            if complete.url == request.url {
                if _queue_showRendition(of: complete.url, dimensions: complete.dimensions, byteCount: complete.data.count,
                                        isPlaceholder: complete.isPlaceholder, source: .memoryCache) == .final { return }
                return _queue_deliverCached(complete, source: .memoryCache, storeInMemory: false) { [self] in
                    _queue_afterMemoryImage(entry)
                }
            }
            if previewResult == nil {
                return _queue_offerPreview(complete, source: .memoryCache) { [self] in _queue_afterMemoryImage(entry) }
            }
        }
        _queue_afterMemoryImage(entry)
    }

    /// The memory step after its complete image: resume its partial, or go on to the disk.
    private func _queue_afterMemoryImage(_ entry: CacheEntry?) {
        if let partial = entry?.partial, partial.url == request.url, _queue_adoptPartial(partial) {
            return _queue_loadFromNetwork()   // TIP's jump: a partial in memory skips the disk
        }
        _queue_loadFromDisk()
    }

    // MARK: - Disk

    private func _queue_loadFromDisk() {
        guard !_queue_abortIfNeeded() else { return }
        guard sources.contains(.diskCache), let disk = pipeline.diskCache else { return _queue_loadFromAdditionalCaches() }
        _queue_setState(.loadingFromDisk)
        metricsRecorder.begin(.diskCache)
        _queue_tellDelegate { $0.fetchOperation(self, willAttemptToLoadFrom: .diskCache) }
        // With rendition tables, the index alone says which image is cached; its rendition needs no file read.
        // (Only asked for requests whose renditions are kept: any other pays one index lookup, not two.)
        if pipeline.renditionTables != nil, RenditionKey.keepsRenditions(of: request),
           let info = disk.completeEntryInfo(for: identifier), info.url == request.url,
           _queue_showRendition(of: info.url, dimensions: info.dimensions, byteCount: info.bytes,
                                isPlaceholder: info.isPlaceholder, source: .diskCache) == .final { return }
        let entry = disk.entry(for: identifier)
        if let complete = entry?.complete {
            if complete.url == request.url {
                return _queue_deliverCached(complete, source: .diskCache, storeInMemory: true) { [self] in
                    _queue_afterDiskImage(entry)
                }
            }
            // One preview per fetch: a disk image of another URL only when the memory cache offered none (b8).
            if previewResult == nil {
                return _queue_offerPreview(complete, source: .diskCache) { [self] in _queue_afterDiskImage(entry) }
            }
        }
        _queue_afterDiskImage(entry)
    }

    /// The disk step after its complete image: resume its partial, other pipelines' disks, additional caches.
    private func _queue_afterDiskImage(_ entry: CacheEntry?) {
        if let partial = entry?.partial, partial.url == request.url, _queue_adoptPartial(partial) {
            return _queue_loadFromNetwork()
        }
        _queue_loadFromOtherPipelines(PipelineRegistry.shared.livePipelines.filter { $0 !== pipeline }[...])
    }

    // MARK: - Previews

    /// Offers `cached` (same identifier, another URL) as a preview at the request's target (b8), then, when the
    /// delegate answers "continue" (or there is none), goes on with `next`. "Stop" ends the fetch with
    /// ``FetchErrorCode/cancelledAfterLoadingPreview`` and keeps the preview in the rendered cache.
    private func _queue_offerPreview(_ cached: CachedImageData, source: ImageLoadSource,
                                     then next: @escaping @Sendable () -> Void) {
        guard let decoded = try? _queue_decode(cached.data) else {
            pipeline.configuration.report(.cachedImageCouldNotBeDecoded(identifier: identifier, source: source))
            return next()
        }
        let (previewImage, transformed) = _queue_transform(decoded.container, progress: -1)
        let preview = FetchResult(image: previewImage, source: source, url: cached.url,
                                  originalDimensions: decoded.properties.dimensions, isPlaceholder: cached.isPlaceholder,
                                  identifier: identifier, imageWasTransformed: transformed)
        shared.withLock { $0.previewResult = preview }
        metricsRecorder.hitPreview()
        // A delegate that answers twice is heard once.
        let answered = Locked(false)
        _queue_onDelegateQueue { [self] in
            guard let delegate else { return queue.async(execute: next) }
            delegate.fetchOperation(self, didLoadPreviewImage: preview) { [self] decision in
                let isFirstAnswer = answered.withLock { wasAnswered in
                    defer { wasAnswered = true }
                    return !wasAnswered
                }
                guard isFirstAnswer else { return }
                queue.async { [self] in
                    guard !_queue_abortIfNeeded() else { return }
                    guard decision == .stopLoading else { return next() }
                    _queue_storeRendered(previewImage, sourceDimensions: decoded.properties.dimensions,
                                         isPlaceholder: cached.isPlaceholder, transformed: transformed)
                    _queue_fail(FetchError(.cancelledAfterLoadingPreview))
                }
            }
        }
    }

    /// tip-behaviour b6: another live pipeline's disk entry with the same identifier *and* URL is copied into
    /// this pipeline's disk cache and delivered from there; with none of `others`, the additional caches.
    private func _queue_loadFromOtherPipelines(_ others: ArraySlice<ImagePipeline>) {
        var others = others
        guard let disk = pipeline.diskCache else { return _queue_loadFromAdditionalCaches() }
        while let other = others.popFirst() {
            guard let found = other.diskCache?.peek(identifier: identifier), found.url == request.url else { continue }
            var copy = found
            copy.timeToLive = request.resolvedTimeToLive
            copy.updatesExpiryOnAccess = !request.options.contains(.doNotResetExpiryOnAccess)
            copy.lastAccess = Date()
            disk.storeComplete(copy, identifier: identifier, forced: !copy.isPlaceholder)
            if let stored = disk.entry(for: identifier)?.complete, stored.url == request.url {
                let rest = others
                return _queue_deliverCached(stored, source: .diskCache, storeInMemory: false) { [self] in
                    _queue_loadFromOtherPipelines(rest)
                }
            }
        }
        _queue_loadFromAdditionalCaches()
    }

    // MARK: - Additional caches

    private func _queue_loadFromAdditionalCaches() {
        guard !_queue_abortIfNeeded() else { return }
        guard sources.contains(.additionalCache) else { return _queue_loadFromNetwork() }
        _queue_setState(.loadingFromAdditionalCache)
        metricsRecorder.begin(.additionalCache)
        _queue_tellDelegate { $0.fetchOperation(self, willAttemptToLoadFrom: .additionalCache) }
        let caches = pipeline.additionalCaches
        guard !caches.isEmpty else { return _queue_loadFromNetwork() }
        let url = request.url
        Task {
            var hit: ImageContainer?
            for cache in caches {
                if let image = await cache.image(for: url) {
                    hit = image
                    break
                }
            }
            let found = hit
            queue.async { [self] in
                guard !_queue_abortIfNeeded() else { return }
                guard let found else { return _queue_loadFromNetwork() }
                // Additional caches are read-only sources: the image goes to the rendered cache only (b9).
                let (image, transformed) = _queue_transform((try? found.scaled(for: request.targetSizing)) ?? found, progress: 1)
                _queue_storeRendered(image, sourceDimensions: found.dimensions, isPlaceholder: false, transformed: transformed)
                var result = FetchResult(image: image, source: .additionalCache, url: url, originalDimensions: found.dimensions,
                                         isPlaceholder: false, identifier: identifier)
                result.imageWasTransformed = transformed
                _queue_succeed(result)
            }
        }
    }

    // MARK: - Shared steps

    /// Decodes cached bytes at the target and succeeds with them. When they do not decode, the entry is dropped
    /// from the cache it came from and the walk goes on with `next`.
    func _queue_deliverCached(_ cached: CachedImageData, source: ImageLoadSource, storeInMemory: Bool,
                              orElse next: @escaping @Sendable () -> Void) {
        _queue_decodeShared(cached.data) { [self] outcome in
            let decoded: DecodedImage
            switch outcome {
            case .success(let image):
                decoded = image
            case .failure:
                pipeline.configuration.report(.cachedImageCouldNotBeDecoded(identifier: identifier, source: source))
                if source == .memoryCache { pipeline.memoryCache.clear(identifier: identifier) }
                if source == .diskCache { pipeline.diskCache?.remove(identifier: identifier) }
                return next()
            }
            // Percolation into the in-memory caches (b9) comes before the final callback: a fetch the delegate
            // starts from there finds the image.
            if storeInMemory { pipeline.memoryCache.storeComplete(cached, identifier: identifier) }
            let (image, transformed) = _queue_transform(decoded.container, progress: 1)
            _queue_storeRendered(image, sourceDimensions: decoded.properties.dimensions, isPlaceholder: cached.isPlaceholder,
                                 transformed: transformed)
            var result = FetchResult(image: image, source: source, url: cached.url,
                                     originalDimensions: decoded.properties.dimensions, isPlaceholder: cached.isPlaceholder,
                                     identifier: identifier)
            result.imageWasTransformed = transformed
            // The operation reports finished once the rendition is kept.
            _queue_succeed(result, percolate: _queue_renditionKeeper(image, of: cached.url, dimensions: cached.dimensions,
                                                                     byteCount: cached.data.count, transformed: transformed,
                                                                     isPlaceholder: cached.isPlaceholder))
        }
    }

    // MARK: - Rendition tables

    /// What the rendition tables had for a cached image.
    enum RenditionTableAnswer {
        /// The final image: the fetch succeeded with it.
        case final
        /// An animation's first frame, shown while the animation decodes.
        case firstFrame
        case miss
    }

    /// Shows the rendition-table view of the cached image of `url` (`dimensions`, `byteCount` bytes) at the
    /// request's target, without decoding: as the final image, or an animation's first frame. A final hit is
    /// not copied into the memory cache: its encoded bytes were never read.
    func _queue_showRendition(of url: URL, dimensions: PixelSize, byteCount: Int, isPlaceholder: Bool,
                              source: ImageLoadSource) -> RenditionTableAnswer {
        guard !isPlaceholder, let tables = pipeline.renditionTables,
              let key = RenditionKey(request: request, identifier: identifier, url: url, dimensions: dimensions,
                                     byteCount: byteCount) else { return .miss }
        let transformed = request.transformer != nil
        guard let bitmap = tables.image(for: key) else {
            guard shared.withLock({ $0.progressiveResult == nil }), let first = tables.image(for: key.firstFrame) else {
                return .miss
            }
            var frame = FetchResult(image: ImageContainer(bitmap: first), source: source, url: url,
                                    originalDimensions: dimensions, isPlaceholder: false, identifier: identifier)
            frame.imageWasTransformed = transformed
            frame.wasLoadedFromRenditionTable = true
            shared.withLock { $0.progressiveResult = frame }
            metricsRecorder.hitProgressFrame()
            _queue_tellDelegate { [frame] in $0.fetchOperation(self, didLoadFirstAnimatedImageFrame: frame, progress: 1) }
            return .firstFrame
        }
        let image = ImageContainer(bitmap: bitmap)
        metricsRecorder.noteRenditionTableHit()
        _queue_storeRendered(image, sourceDimensions: dimensions, isPlaceholder: false, transformed: transformed)
        var result = FetchResult(image: image, source: source, url: url, originalDimensions: dimensions,
                                 isPlaceholder: false, identifier: identifier)
        result.imageWasTransformed = transformed
        result.wasLoadedFromRenditionTable = true
        _queue_succeed(result)
        return .final
    }

    /// The step, run after the final callback, that keeps a final image decoded from the cached or downloaded
    /// image of `url` in the rendition tables (an animation's first frame only); `nil`, so that the fetch takes
    /// no extra step, when there is nothing to keep: no tables, a placeholder, a request whose renditions are
    /// never kept, or a transformer that left the image as it was (the key would claim it transformed).
    func _queue_renditionKeeper(_ image: ImageContainer, of url: URL, dimensions: PixelSize, byteCount: Int,
                                transformed: Bool, isPlaceholder: Bool) -> (@Sendable () -> Void)? {
        guard !isPlaceholder, let tables = pipeline.renditionTables, transformed == (request.transformer != nil),
              let key = RenditionKey(request: request, identifier: identifier, url: url, dimensions: dimensions,
                                     byteCount: byteCount) else { return nil }
        return { tables.store(image.bitmap, key: image.isAnimated ? key.firstFrame : key) }
    }

    /// Takes a partial image to resume, when the request allows resuming. True when adopted.
    private func _queue_adoptPartial(_ partial: PartialImageData) -> Bool {
        guard sources.contains(.networkResumed) || sources.contains(.network),
              !request.options.contains(.treatAsPlaceholder) else { return false }
        resumablePartial = partial
        return true
    }

    /// Decodes `data` at the request's target, timed for the decode-duration metric; stopped at the codec's
    /// checkpoints when `interruption` says so (``ImageCodecError/interrupted``).
    func _queue_decode(_ data: Data, interruption: DecodeInterruption? = nil) throws -> DecodedImage {
        let started = ContinuousClock.now
        let decoded = try DecodeInterruption.$current.withValue(interruption) {
            try CodecCatalogue.shared.decode(data, target: request.targetSizing, configuration: request.decoderConfiguration)
        }
        pipeline.configuration.recordDecode(of: decoded.properties.type, duration: ContinuousClock.now - started)
        return decoded
    }

    /// Decodes `data` at the request's target, or joins a decode of the same bytes that another fetch of this
    /// pipeline is running (``SharedDecodes``), then runs `body` on this queue: at once after an own decode,
    /// later for a joined one, and then not at all when this fetch was cancelled (or finished) meanwhile.
    ///
    /// A fetch cancelled while it decodes stops at the codec's next checkpoint and ends cancelled, unless other
    /// fetches wait for that decode; a waiting fetch whose decode was stopped that way decodes on its own.
    func _queue_decodeShared(_ data: Data, ifAborted aborted: (@Sendable () -> Void)? = nil,
                             then body: @escaping @Sendable (SharedDecodes.Outcome) -> Void) {
        let key = SharedDecodes.Key(identifier: identifier, target: request.targetSizing,
                                    configuration: request.decoderConfiguration, byteCount: data.count)
        let decodes = pipeline.sharedDecodes
        let interruption = DecodeInterruption { [weak self] in
            (self?.isCancelled ?? true) && !decodes.hasWaiters(key)
        }
        // The image is held for fetches that get these bytes before `body` puts it in the rendered cache. The
        // fetches that waited for this decode, the ones answered from its rendition and this one deliver their
        // callbacks in one turn of the delegate queue (B13: a hundred fetches of one image), sent once `body` ran.
        let turn = SharedDelegateTurn()
        let own = decodes.decode(data, key: key, holdingUntilReleased: true,
                                 using: { try _queue_decode(data, interruption: interruption) },
                                 sharing: turn) { [self] outcome, turn in
            let run: @Sendable () -> Void = { [self] in
                guard !_queue_abortIfNeeded() else { return aborted?() ?? () }
                if Self.wasInterrupted(outcome) { return _queue_decodeShared(data, ifAborted: aborted, then: body) }
                body(outcome)
            }
            guard let turn else { return queue.async(execute: run) }
            // Called by the decoding fetch, which waits: this queue is idle (this fetch only waited for the
            // decode) or finishes what it runs without waiting on another fetch's queue.
            queue.sync { _queue_sharingDelegateTurn(turn, run) }
        }
        guard let own else { return }
        defer {
            decodes.release(key)
            turn.enqueue(on: pipeline.configuration.delegateQueue)
        }
        if Self.wasInterrupted(own) {
            metricsRecorder.noteDecodeInterrupted()
            if _queue_abortIfNeeded() { return aborted?() ?? () }
        }
        _queue_sharingDelegateTurn(turn) { body(own) }
    }

    /// Runs `body` with this fetch's next delegate-queue work going into `turn` (nothing of it is on the
    /// delegate queue yet, or what is there runs first anyway).
    func _queue_sharingDelegateTurn(_ turn: SharedDelegateTurn, _ body: () -> Void) {
        let outer = sharedDelegateTurn
        sharedDelegateTurn = turn
        defer { sharedDelegateTurn = outer }
        body()
    }

    private static func wasInterrupted(_ outcome: SharedDecodes.Outcome) -> Bool {
        if case .failure(let error) = outcome, (error as? ImageCodecError) == .interrupted { return true }
        return false
    }

    /// Keeps a delivered image in the rendered cache (b9): not for placeholders, untargeted or centered
    /// requests, or images transformed by a transformer without an identifier.
    func _queue_storeRendered(_ image: ImageContainer, sourceDimensions: PixelSize, isPlaceholder: Bool, transformed: Bool = false) {
        guard !request.options.contains(.skipStoringToRenderedCache), !isPlaceholder, request.targetSizing.scalesToTarget
        else { return }
        let transformerIdentifier = transformed ? request.transformer?.identifier : nil
        guard !transformed || transformerIdentifier != nil else { return }
        pipeline.renderedCache.store(RenderedImage(image: image, transformerIdentifier: transformerIdentifier,
                                                   sourceDimensions: sourceDimensions), identifier: identifier)
        // Fetches of this rendition still waiting in the operation queue need no turn of it (B13). One with
        // dependencies left waits for them, and then finds the rendition when it starts.
        //
        // `sync`: a waiting fetch's queue is idle, so the answer runs in place, in order with a `start()` that
        // comes at the same moment. It cannot deadlock: only fetches that have not started are listed, and
        // answering one never waits on another queue. Many waiting fetches are answered on every core at once.
        // Their callbacks share one turn of the delegate queue, enqueued once all are answered: a hundred turns
        // sent from two threads reached the queue in waves, each waking its thread again (B13's spread).
        let waiting = pipeline.waitingFetches.take(waitingFor: renderedLookup).filter { $0 !== self && $0.isReady }
        guard !waiting.isEmpty else { return }
        let turn = sharedDelegateTurn ?? SharedDelegateTurn()
        DispatchQueue.concurrentPerform(iterations: waiting.count) { index in
            waiting[index].queue.sync { waiting[index]._queue_answerWhileWaiting(sharing: turn) }
        }
        // A turn this fetch shares is sent by whoever made it, after this fetch's own callbacks joined it.
        if sharedDelegateTurn == nil { turn.enqueue(on: pipeline.configuration.delegateQueue) }
    }

    /// A fetch still waiting in the operation queue, answered from the rendered cache with the rendition another
    /// fetch just made: its delegate hears now; the operation reports finished once the queue starts it.
    func _queue_answerWhileWaiting(sharing turn: SharedDelegateTurn) {
        guard state == .idle, !isCancelled, !isDelegateGone,
              let (result, isDirty) = pipeline.renderedResult(for: self), !isDirty else { return }
        // A fetch that never started has nothing on the delegate queue yet: its callbacks can go in the shared turn.
        _queue_sharingDelegateTurn(turn) {
            _queue_setState(.starting)
            _queue_tellDelegate { $0.fetchOperationDidStart(self) }
            metricsRecorder.begin(.memoryCache)
            _queue_succeed(result)
        }
    }

    /// Applies the request's transformer (a6) and scales its result to the target; `transformed` is false when
    /// there is none or it left the image as it was.
    func _queue_transform(_ image: ImageContainer, progress: Double) -> (image: ImageContainer, transformed: Bool) {
        guard let transformer = request.transformer,
              let result = transformer.transform(image, progress: progress, targetSizing: request.targetSizing)
        else { return (image, false) }
        return ((try? result.scaled(for: request.targetSizing)) ?? result, true)
    }
}
