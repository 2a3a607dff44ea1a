import Foundation

// Delivering an image found or downloaded: decode it (or share another fetch's decode of the same bytes; after a
// download, the session that showed its scans goes on to the final image), transform and scale it, keep it in
// the rendered cache (answering the fetches that wait for that rendition), then succeed and name the steps that
// follow the delivery. Every method runs on the operation's queue.
extension FetchOperation {
    /// Decodes cached bytes read from `tier` at the target and succeeds with them; a disk image percolates into
    /// memory first unless `percolates` is false. When the bytes do not decode, the entry is dropped from `tier`
    /// and the walk goes on with `next`.
    func _queue_deliverCached(_ cached: CachedImageData, from tier: PipelineCaches.Tier, percolates: Bool = true,
                              source: ImageLoadSource? = nil, orElse next: @escaping @Sendable () -> Void) {
        // A rendition that another fetch of the image kept while this one read memory or disk (the memory step
        // looked for one first) is taken as that step would have. On disk this is a fetch that missed memory
        // just before another fetch of the image stored it, and found the disk file that fetch wrote since: with
        // that fetch's decode over and released, only the rendition spares a second decode. A fetch that may not
        // read memory takes nothing from it, nor does a revalidated disk image, which is delivered as such.
        let source = source ?? tier.loadSource
        let takesRendition = plan.sources.contains(.memoryCache) && source != .diskRevalidated
        let shortcut = !takesRendition ? nil : RenditionShortcut(
            find: { [self] in pipeline.cleanRendition(for: plan) },
            deliver: { [self] rendered in _queue_succeed(rendered) })
        _queue_decodeShared(cached.data, unlessRendered: shortcut) { [self] outcome in
            guard case .success(let decoded) = outcome else {
                pipeline.configuration.report(.cachedImageCouldNotBeDecoded(identifier: plan.identifier, source: source))
                pipeline.caches.forgetUndecodable(identifier: plan.identifier, in: tier)
                return next()
            }
            // The in-memory caches take the image before the final callback: a fetch the delegate starts from
            // there finds it.
            if percolates {
                pipeline.configuration.measuring(.memoryStore) {
                    pipeline.caches.percolate(cached, readFrom: tier, identifier: plan.identifier)
                }
            }
            let (result, keepRendition) = _queue_finalResult(decoded, of: cached, source: source)
            // The operation reports finished once the rendition is kept.
            _queue_succeed(result, afterDelivery: keepRendition.map { [$0] } ?? [])
        }
    }

    /// The final image of `cached` from its decode: transformed and scaled for the request and kept in the
    /// rendered cache (which answers the fetches waiting for that rendition), with the step that keeps it in
    /// the rendition tables after delivery.
    func _queue_finalResult(_ decoded: DecodedImage, of cached: CachedImageData, source: ImageLoadSource)
        -> (result: FetchResult, keepRendition: AfterDeliveryStep?) {
        let dimensions = decoded.properties.dimensions
        let (image, transformed) = _queue_transform(decoded.container, progress: 1)
        _queue_keepRendered(image, from: cached.url, sourceDimensions: dimensions, isPlaceholder: cached.isPlaceholder,
                            transformed: transformed)
        let result = FetchResult(image: image, source: source, url: cached.url, originalDimensions: dimensions,
                                 isPlaceholder: cached.isPlaceholder, identifier: plan.identifier, imageWasTransformed: transformed)
        return (result, _queue_renditionStep(image, of: CachedImageInfo(cached), transformed: transformed))
    }

    /// Succeeds with `result`, made from newly fetched bytes (a download, or the fleet's shared cache): `cached`
    /// goes in the memory cache before the delegate hears of it, so a fetch started from the final callback
    /// finds it there, and on disk after (or, when `writesToDisk` is false, the disk forgets the identifier's
    /// image). The store is announced, and the steps of `afterStore` run, before the operation reports finished.
    func _queue_succeed(_ result: FetchResult, storing cached: CachedImageData, decoded: DecodedImage,
                        replacesSameURL: Bool = false, writesToDisk: Bool = true, afterStore: [AfterDeliveryStep]) {
        let inMemory = measuring(.memoryStore) {
            pipeline.caches.keepDownloaded(cached, identifier: plan.identifier, replacesSameURL: replacesSameURL)
        }
        let storedInfo = StoredImageInfo(pipelineIdentifier: pipeline.identifier, identifier: plan.identifier,
                                         url: plan.url, dimensions: decoded.properties.dimensions,
                                         isPlaceholder: plan.isPlaceholder, wasManuallyStored: false,
                                         image: decoded.container)
        let diskWrite = AfterDeliveryStep.writeToDisk(cached, replacesSameURL: replacesSameURL, writes: writesToDisk,
                                                      announcement: inMemory ? nil : storedInfo)
        _queue_succeed(result, afterDelivery: [diskWrite] + afterStore)
        // Stored in memory already: announced right after the final callback, in the same turn of the delegate
        // queue, instead of in a turn of its own once the disk write is over.
        if inMemory { _queue_onDelegateQueue(pipeline.storeAnnouncement(storedInfo)) }
    }

    // MARK: - Downloaded images

    /// Delivers what a download brought: decoded (or shared with the fetches of the same download, or taken from
    /// the rendition another fetch of it made), kept in memory at once, and, for the fetch that owned the
    /// download (`owned`), on disk, in the rendition tables and in the fleet's shared cache after delivery.
    func _queue_deliverDownloaded(_ result: DownloadResult, owned: DownloadAttachment?) {
        let release = owned.map(AfterDeliveryStep.releaseDownload)
        let releaseNow: @Sendable () -> Void = { owned?.resultStored() }
        // A fetch that got the bytes after the decode another fetch made of them ended (a download stays
        // joinable until stored; the decode's image is held until it is in the rendered cache) takes it from
        // there rather than decoding again, when that rendition is of these bytes' URL (one of another URL, a
        // kept preview, is not what was downloaded).
        let rendition: @Sendable () -> FetchResult? = { [self] in
            pipeline.cleanRendition(for: plan).flatMap { $0.url == plan.url ? $0 : nil }
        }
        if !result.isOwner, let rendered = rendition() { return _queue_deliverDownloaded(result, rendered: rendered) }
        let shortcut = result.isOwner
            ? _queue_ownerShortcut(result, rendition: rendition, release: release)
            : RenditionShortcut(find: rendition) { [self] rendered in _queue_deliverDownloaded(result, rendered: rendered) }
        // Fetches that shared the download share its decode too.
        _queue_decodeShared(result.data, ifAborted: releaseNow, unlessRendered: shortcut,
                            finishingIncremental: true) { [self] outcome in
            switch outcome {
            case .success(let decoded):
                _queue_deliverDownloaded(result, decoded: decoded, release: release)
            case .failure(let error):
                pipeline.configuration.report(.imageDownloadedCouldNotBeDecoded(identifier: plan.identifier,
                                                                                bytes: result.data.count))
                releaseNow()
                _queue_fail(FetchError(.couldNotDecodeImage, underlying: error))
            }
        }
    }

    /// How the owner of a download skips decoding its bytes when another fetch of the download got them first
    /// and decoded them: its decode over and released before the owner asked, only the rendition it kept is
    /// left. The owner then stores the bytes with what that rendition tells (the format from the bytes' magic
    /// numbers). Only an untransformed rendition is the decoded image that the store announces; a request that
    /// may not read memory takes nothing from it.
    private func _queue_ownerShortcut(_ result: DownloadResult, rendition: @escaping @Sendable () -> FetchResult?,
                                      release: AfterDeliveryStep?) -> RenditionShortcut? {
        guard plan.sources.contains(.memoryCache), let type = ImageType.detect(magicNumbersOf: result.data) else { return nil }
        return RenditionShortcut(find: { rendition().flatMap { $0.imageWasTransformed ? nil : $0 } }) { [self] rendered in
            let properties = ImageProperties(type: type, dimensions: rendered.originalDimensions,
                                             isAnimated: rendered.image.isAnimated, frameCount: rendered.image.frameCount)
            _queue_deliverDownloaded(result, decoded: DecodedImage(container: rendered.image, properties: properties),
                                     release: release)
        }
    }

    /// A shared download's bytes whose image another fetch already decoded into the rendered cache (not the
    /// owner's: nothing to store).
    private func _queue_deliverDownloaded(_ result: DownloadResult, rendered: FetchResult) {
        _queue_noteDownloadedImage(result, type: ImageType.detect(magicNumbersOf: result.data),
                                   dimensions: rendered.originalDimensions)
        var image = rendered
        image.source = result.wasResumed ? .networkResumed : .network
        _queue_succeed(image)
    }

    /// A download decoded: its bytes go in memory now, then after delivery on disk, with the steps that come
    /// after a store (`release`, the owner's release of the shared download, first) and the fleet's copy last.
    private func _queue_deliverDownloaded(_ result: DownloadResult, decoded: DecodedImage, release: AfterDeliveryStep?) {
        let source: ImageLoadSource = result.wasResumed ? .networkResumed : .network
        _queue_noteDownloadedImage(result, type: decoded.properties.type, dimensions: decoded.properties.dimensions)
        let cached = plan.cachedImage(result.data, dimensions: decoded.properties.dimensions,
                                      isAnimated: decoded.properties.isAnimated,
                                      httpMetadata: HTTPCacheMetadata(headers: result.response.headers,
                                                                      receivedAt: responseReceivedAt ?? Date()))
        let (image, keepRendition) = _queue_finalResult(decoded, of: cached, source: source)
        // Only the fetch that owned the download stores its bytes (TIP: the first attached operation).
        guard result.isOwner else { return _queue_succeed(image, afterDelivery: keepRendition.map { [$0] } ?? []) }
        pipeline.configuration.recordNetworkBytes(result.data.count, pipeline: pipeline.identifier)
        let replacesSameURL = _queue_downloadReplacesSameURL
        // Under the HTTP policy, a response that forbids storing stays off the disk, and so does the image it
        // replaces; nor does it go to the fleet's shared cache.
        let writesToDisk = !(replacesSameURL && cached.httpMetadata?.directives.noStore == true)
        // The fill lease this fetch holds goes with the write-through, taken now so that finishing the fetch does
        // not give it back first; without a write-through, finishing gives it back.
        var writeThrough: AfterDeliveryStep?
        if writesToDisk, pipeline.caches.sharedCache != nil {
            writeThrough = .writeThrough(cached, type: decoded.properties.type, lease: sharedCacheLease)
            sharedCacheLease = nil
        }
        _queue_succeed(image, storing: cached, decoded: decoded, replacesSameURL: replacesSameURL,
                       writesToDisk: writesToDisk, afterStore: [release, keepRendition, writeThrough].compactMap { $0 })
    }

    /// Metrics and observers hear of a downloaded image.
    private func _queue_noteDownloadedImage(_ result: DownloadResult, type: ImageType?, dimensions: PixelSize) {
        if let type { metricsRecorder.noteNetworkImage(bytes: result.data.count, type: type, dimensions: dimensions) }
        for observer in pipeline.currentObservers {
            observer.imagePipeline(pipeline, didFinishDownloadingImageAt: plan.url, imageType: type,
                                   sizeInBytes: result.data.count, dimensions: dimensions, wasResumed: result.wasResumed)
        }
    }

    /// Whether a download replaces a cached image of the same URL whatever its size: under the HTTP policy the
    /// origin's latest `200` is the image's current version (TIP's rules keep the cached one when the sizes are
    /// equal, which would keep a changed image's old bytes forever).
    var _queue_downloadReplacesSameURL: Bool { pipeline.freshnessPolicy == .http }

    /// Decodes `data` at the target, or joins a decode of the same bytes that another fetch of this pipeline is
    /// running (``SharedDecodes``), then runs `body` on this queue: at once after an own decode, later for a
    /// joined one, and then not at all when this fetch was cancelled (or finished) meanwhile.
    ///
    /// A fetch cancelled while it decodes stops at the codec's next checkpoint and ends cancelled, unless other
    /// fetches wait for that decode; a waiting fetch whose decode was stopped that way decodes on its own.
    ///
    /// With `shortcut`, a fetch that would decode on its own first looks for a rendition of these bytes in the
    /// rendered cache and delivers that instead (see ``RenditionShortcut``).
    func _queue_decodeShared(_ data: Data, ifAborted aborted: (@Sendable () -> Void)? = nil,
                             unlessRendered shortcut: RenditionShortcut? = nil, finishingIncremental: Bool = false,
                             then body: @escaping @Sendable (SharedDecodes.Outcome) -> Void) {
        let key = plan.keys.decodeKey(byteCount: data.count)
        let decodes = pipeline.sharedDecodes
        let interruption = DecodeInterruption { [weak self] in
            (self?.isCancelled ?? true) && !decodes.hasWaiters(key)
        }
        // The image is held for fetches that get these bytes before `body` puts it in the rendered cache. The
        // fetches that waited for this decode, the ones answered from its rendition and this one deliver their
        // callbacks in one turn of the delegate queue (a hundred fetches of one image then reach the delegate
        // within a fraction of a millisecond), sent once `body` ran.
        let turn = SharedDelegateTurn()
        let hold = SharedDecodes.Hold(key)
        var rendition: FetchResult?
        let own = decodes.decode(data, key: key, holding: hold,
                                 using: {
                                     // Asked only once this fetch is to decode on its own: a decode of the same
                                     // bytes that ended before then had kept its rendition before releasing them,
                                     // so a look any earlier could miss both.
                                     if let found = shortcut?.find() {
                                         rendition = found
                                         throw RenditionShortcut.Taken()
                                     }
                                     return try _queue_decode(data, interruption: interruption,
                                                              finishingIncremental: finishingIncremental)
                                 },
                                 sharing: turn) { [self] outcome, turn in
            let run: @Sendable () -> Void = { [self] in
                guard !_queue_abortIfNeeded() else { return aborted?() ?? () }
                // A decode stopped for its own fetch or for want of memory, or not made since a rendition was
                // found, is this fetch's to make (or to find the same rendition, or to wait for memory).
                if Self.wasInterrupted(outcome) || Self.tookRendition(outcome) || Self.stoppedForRoom(outcome) != nil {
                    return _queue_decodeShared(data, ifAborted: aborted, unlessRendered: shortcut,
                                               finishingIncremental: finishingIncremental, then: body)
                }
                body(outcome)
            }
            guard let turn else { return queue.async(execute: run) }
            // Called by the decoding fetch, which waits (with a thread per fetch): this queue is idle (this fetch
            // only waited for the decode) or finishes what it runs without waiting on another fetch's queue.
            runFromAnotherThread(holdingOpen: turn) { [self] in _queue_sharingDelegateTurn(turn, run) }
        }
        guard let own else { return }
        defer {
            decodes.release(hold)
            turn.enqueue(on: pipeline.configuration.delegateQueue)
        }
        if let rendition, let shortcut {
            return _queue_sharingDelegateTurn(turn) { shortcut.deliver(rendition) }
        }
        if let bytes = Self.stoppedForRoom(own) {
            return _queue_waitForDecodeMemory(bytes) { [self] hasRoom in
                guard !_queue_abortIfNeeded() else { return aborted?() ?? () }
                guard hasRoom else { return body(.failure(ImageCodecError.limitExceeded(.decodeMemoryBudget(bytes)))) }
                _queue_decodeShared(data, ifAborted: aborted, unlessRendered: shortcut,
                                    finishingIncremental: finishingIncremental, then: body)
            }
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

    private static func stoppedForRoom(_ outcome: SharedDecodes.Outcome) -> Int? {
        if case .failure(let error) = outcome, let noRoom = error as? DecodeMemoryBudget.NoRoom { return noRoom.bytes }
        return nil
    }

    private static func tookRendition(_ outcome: SharedDecodes.Outcome) -> Bool {
        if case .failure(let error) = outcome, error is RenditionShortcut.Taken { return true }
        return false
    }

    /// Applies the request's transformer and scales its result to the target; `transformed` is false when
    /// there is none or it left the image as it was.
    func _queue_transform(_ image: ImageContainer, progress: Double) -> (image: ImageContainer, transformed: Bool) {
        guard let transformer = plan.transformer else { return (image, false) }
        return measuring(.transform) {
            guard let result = transformer.transform(image, progress: progress, targetSizing: plan.target) else {
                return (image, false)
            }
            return ((try? result.scaled(for: plan.target)) ?? result, true)
        }
    }

    // MARK: - The rendered cache

    /// Keeps a delivered image in the rendered cache when ``FetchKeys/mayKeepRendered(isPlaceholder:transformed:)``
    /// allows, and answers the fetches waiting in the operation queue for that rendition.
    ///
    /// `url` is where the image was loaded from, which a preview of another URL makes differ from the request's.
    func _queue_keepRendered(_ image: ImageContainer, from url: URL, sourceDimensions: PixelSize, isPlaceholder: Bool,
                             transformed: Bool) {
        guard plan.keys.mayKeepRendered(isPlaceholder: isPlaceholder, transformed: transformed) else { return }
        pipeline.configuration.measuring(.renditionStore) {
            pipeline.caches.keepRendered(
                RenderedImage(image: image, transformerIdentifier: plan.keys.renderedTransformerIdentifier(transformed: transformed),
                              sourceDimensions: sourceDimensions, url: url),
                identifier: plan.identifier)
        }
        // Fetches of this rendition still waiting in the operation queue need no turn of it. One with
        // dependencies left waits for them, and then finds the rendition when it starts.
        //
        // In place, with a thread per fetch (`runFromAnotherThread`): a waiting fetch's queue is idle. A fetch
        // that started meanwhile is left to its own steps, which find the rendition; one that starts after it
        // was claimed follows the answer (`start()`). It cannot deadlock: only fetches that have not started are
        // answered, and answering one never waits on another queue. Many waiting fetches
        // are answered on every core at once. Their callbacks share one turn of the delegate queue, enqueued once
        // all are answered: turns sent one by one from several threads reach the queue in waves, each waking its
        // thread again.
        let waiting = pipeline.waitingFetches.take(waitingFor: plan.keys.renderedLookup).filter { $0 !== self && $0.isReady }
        guard !waiting.isEmpty else { return }
        let turn = sharedDelegateTurn ?? SharedDelegateTurn()
        DispatchQueue.concurrentPerform(iterations: waiting.count) { index in
            let fetch = waiting[index]
            guard fetch.claimAnswerBeforeStart() else { return }
            fetch.runFromAnotherThread(holdingOpen: turn) { fetch._queue_answerWhileWaiting(sharing: turn) }
        }
        // A turn this fetch shares is sent by whoever made it, after this fetch's own callbacks joined it.
        if sharedDelegateTurn == nil { turn.enqueue(on: pipeline.configuration.delegateQueue) }
    }

    /// A fetch still waiting in the operation queue, answered from the rendered cache with the rendition another
    /// fetch just made: its delegate hears now; the operation reports finished once the queue starts it.
    private func _queue_answerWhileWaiting(sharing turn: SharedDelegateTurn) {
        guard state == .idle, !isCancelled, !isDelegateGone,
              let result = pipeline.cleanRendition(for: plan) else { return }
        // A fetch that never started has nothing on the delegate queue yet: its callbacks can go in the shared turn.
        _queue_sharingDelegateTurn(turn) {
            _queue_setState(.starting)
            _queue_tellDelegateStarted()
            metricsRecorder.begin(.memoryCache)
            _queue_succeed(result)
        }
    }
}
