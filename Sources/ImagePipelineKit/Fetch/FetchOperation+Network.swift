import Foundation
import Synchronization
import PipelineLocking

// The network step of a fetch: a share of a coordinated download, progress, decoding once complete, and the
// downloaded bytes kept in the memory cache at once and on disk after delivery.
extension FetchOperation {
    func _queue_loadFromNetwork() -> SourceOutcome {
        let partial = plan.mayResume ? resumablePartial : nil
        guard plan.sources.contains(.network) || (plan.sources.contains(.networkResumed) && partial != nil) else {
            _queue_fail(FetchError(.couldNotLoadImage))
            return .finished
        }
        // A resume and a revalidation exclude each other: a disk image to revalidate is a complete one.
        let revalidating = partial == nil ? revalidatingImage : nil
        let source: ImageLoadSource = partial != nil ? .networkResumed : revalidating != nil ? .diskRevalidated : .network
        _queue_begin(source, state: .loadingFromNetwork)
        if let partial {
            shared.withLock { $0.receivedByteCount = partial.data.count }
            _queue_setProgress(min(Double(partial.data.count) / Double(max(partial.expectedByteCount, 1)), 0.999))
        }
        let download = plan.downloadRequest(pipelineIdentifier: pipeline.identifier, partial: partial,
                                            revalidating: revalidating?.httpMetadata,
                                            headers: pipeline.configuration.downloadHeaders,
                                            limits: pipeline.configuration.downloadLimits)
        // Identical fetches that reach the network before this one stored what it downloaded get its bytes.
        let attachment = pipeline.configuration.downloadCoordinator.load(download, priority: priority,
                                                                         client: FetchDownloadClient(operation: self),
                                                                         sharesResultUntilStored: true)
        shared.withLock { $0.attachment = attachment }
        for observer in pipeline.currentObservers { observer.imagePipeline(pipeline, didStartDownloadingImageAt: plan.url) }
        // A cancel that came in before the attachment existed did not reach it.
        if isCancelled { attachment.cancel() }
        return .waiting
    }

    func _queue_networkDidReceive(_ response: DownloadResponse, resumedByteCount: Int, expectedByteCount: Int?) {
        guard !state.isFinished else { return }
        if response.statusCode != 304 { _queue_revalidationAnsweredWithImage() }
        responseForbidsStoring = CacheControl(parsing: response.headers.values(for: "Cache-Control")).noStore
        responseReceivedAt = Date()
        if resumablePartial != nil, resumedByteCount == 0 {
            // The server sent the whole image again: the partial is gone (TIP's "did reset from partial").
            resumablePartial = nil
            incremental = IncrementalImageState()
            metricsRecorder.rekeyOpenSource(as: .network)
            guard plan.sources.contains(.network) else {
                shared.withLock { $0.attachment }?.cancel()
                return _queue_fail(FetchError(.couldNotLoadImage))
            }
            shared.withLock { $0.receivedByteCount = 0 }
            _queue_setProgress(0)
        }
    }

    /// Takes the chunks that arrived together (each with the download's byte count after it): one progress
    /// report for all of them, then each shown as far as the incremental policy allows.
    func _queue_networkDidAppend(_ chunks: [(Data, totalByteCount: Int)], expectedByteCount: Int?) {
        guard !state.isFinished, let last = chunks.last else { return }
        if isDelegateGone {
            // The delegate is gone (TIP: the operation is cancelled when its delegate deallocates): leave the
            // download; its cancelled outcome finishes the fetch.
            return cancel()
        }
        let progressAfter = { (total: Int) in expectedByteCount.map { min(Double(total) / Double(max($0, 1)), 0.999) } }
        shared.withLock { $0.receivedByteCount = last.totalByteCount }
        if let progress = progressAfter(last.totalByteCount) { _queue_setProgress(progress) }
        for (chunk, total) in chunks {
            _queue_showIncrementally(chunk, totalByteCount: total, progress: progressAfter(total) ?? 0)
        }
    }

    func _queue_networkDidFinish(_ outcome: DownloadOutcome) {
        guard !state.isFinished else {
            if case .success(let result) = outcome, result.isOwner { shared.withLock { $0.attachment }?.resultStored() }
            return
        }
        switch outcome {
        case .notModified(let response):
            _queue_revalidated(response)
        case .failure(let error, let partial):
            if let partial { _queue_keepPartial(partial) }
            _queue_fail(FetchError(networkError: error))
        case .success(let result):
            // The owner says when identical fetches may stop getting these bytes from the coordinator: once they
            // are in the caches (a step after delivery), or at once when it will not store them.
            let owned = result.isOwner ? shared.withLock { $0.attachment } : nil
            let release = owned.map(AfterDeliveryStep.releaseDownload)
            let releaseNow: @Sendable () -> Void = { owned?.resultStored() }
            // A fetch cancelled as its last bytes came in (its cell scrolled off, say) does not decode them
            // (TIP's abort check before every step).
            guard !_queue_abortIfNeeded() else { return releaseNow() }
            // A fetch that got the bytes after the decode another fetch made of them ended (a download stays
            // joinable until stored; the decode's image is held until it is in the rendered cache) takes it from
            // there rather than decoding again, when that rendition is of these bytes' URL (one of another URL, a
            // kept preview, is not what was downloaded).
            let rendition: @Sendable () -> FetchResult? = { [self] in
                pipeline.cleanRendition(for: plan).flatMap { $0.url == plan.url ? $0 : nil }
            }
            if !result.isOwner, let rendered = rendition() { return _queue_networkSucceeded(result, rendered: rendered) }
            let shortcut = result.isOwner
                ? _queue_ownerShortcut(result, rendition: rendition, release: release)
                : RenditionShortcut(find: rendition) { [self] rendered in _queue_networkSucceeded(result, rendered: rendered) }
            // Fetches that shared the download share its decode too.
            _queue_decodeShared(result.data, ifAborted: releaseNow, unlessRendered: shortcut,
                                finishingIncremental: true) { [self] outcome in
                switch outcome {
                case .success(let decoded):
                    _queue_networkSucceeded(result, decoded: decoded, release: release)
                case .failure(let error):
                    pipeline.configuration.report(.imageDownloadedCouldNotBeDecoded(identifier: plan.identifier,
                                                                                    bytes: result.data.count))
                    releaseNow()
                    _queue_fail(FetchError(.couldNotDecodeImage, underlying: error))
                }
            }
        }
    }

    /// Metrics and observers hear of a downloaded image.
    private func _queue_noteNetworkImage(_ result: DownloadResult, type: ImageType?, dimensions: PixelSize) {
        if let type { metricsRecorder.noteNetworkImage(bytes: result.data.count, type: type, dimensions: dimensions) }
        for observer in pipeline.currentObservers {
            observer.imagePipeline(pipeline, didFinishDownloadingImageAt: plan.url, imageType: type,
                                   sizeInBytes: result.data.count, dimensions: dimensions, wasResumed: result.wasResumed)
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
            _queue_networkSucceeded(result, decoded: DecodedImage(container: rendered.image, properties: properties),
                                    release: release)
        }
    }

    /// A shared download's bytes whose image another fetch already decoded into the rendered cache (not the
    /// owner's: nothing to store).
    private func _queue_networkSucceeded(_ result: DownloadResult, rendered: FetchResult) {
        _queue_noteNetworkImage(result, type: ImageType.detect(magicNumbersOf: result.data),
                                dimensions: rendered.originalDimensions)
        var image = rendered
        image.source = result.wasResumed ? .networkResumed : .network
        _queue_succeed(image)
    }

    /// A download decoded: its bytes go in memory now and on disk after delivery, followed by the steps that come
    /// after a store (`release`, the owner's release of the shared download, first).
    private func _queue_networkSucceeded(_ result: DownloadResult, decoded: DecodedImage, release: AfterDeliveryStep?) {
        let source: ImageLoadSource = result.wasResumed ? .networkResumed : .network
        _queue_noteNetworkImage(result, type: decoded.properties.type, dimensions: decoded.properties.dimensions)
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
        let writeThrough = writesToDisk ? _queue_sharedCacheWriteThrough(of: cached, type: decoded.properties.type) : nil
        _queue_succeed(image, storing: cached, decoded: decoded, replacesSameURL: replacesSameURL,
                       writesToDisk: writesToDisk, afterStore: [release, keepRendition, writeThrough].compactMap { $0 })
    }

    /// A download that stopped early leaves its bytes for the next fetch to resume (never for placeholders).
    private func _queue_keepPartial(_ partial: PartialImageData) {
        guard !plan.isPlaceholder, !(_queue_downloadReplacesSameURL && responseForbidsStoring) else { return }
        var partial = partial
        partial.timeToLive = plan.timeToLive
        partial.updatesExpiryOnAccess = plan.updatesExpiryOnAccess
        pipeline.caches.keepPartial(partial, identifier: plan.identifier)
    }
}

/// Relays a fetch's share of a download from the coordinator's queue to the fetch's own queue; the events of a
/// burst go in one block (``QueueBacklog``), and its chunks are taken together.
final class FetchDownloadClient: DownloadClient {
    private enum Event: Sendable {
        case response(DownloadResponse, resumedByteCount: Int, expectedByteCount: Int?)
        case chunk(Data, totalByteCount: Int)
        case finish(DownloadOutcome)
    }

    private let backlog: QueueBacklog<Event>

    init(operation: FetchOperation) {
        // From the response head; read for each chunk. Only the fetch's queue touches it.
        let expected = Locked<Int?>(nil)
        backlog = QueueBacklog(queue: operation.queue) { events in
            var chunks: [(Data, totalByteCount: Int)] = []
            func flushChunks() {
                guard !chunks.isEmpty else { return }
                operation._queue_networkDidAppend(chunks, expectedByteCount: expected.withLock { $0 })
                chunks = []
            }
            for event in events {
                switch event {
                case .response(let response, let resumed, let expectedByteCount):
                    flushChunks()
                    expected.withLock { $0 = expectedByteCount }
                    operation._queue_networkDidReceive(response, resumedByteCount: resumed, expectedByteCount: expectedByteCount)
                case .chunk(let chunk, let total):
                    chunks.append((chunk, total))
                case .finish(let outcome):
                    flushChunks()
                    operation._queue_networkDidFinish(outcome)
                }
            }
            flushChunks()
        }
    }

    func downloadAttachment(_ attachment: DownloadAttachment, didReceive response: DownloadResponse, resumedByteCount: Int,
                     expectedByteCount: Int?) {
        backlog.add(.response(response, resumedByteCount: resumedByteCount, expectedByteCount: expectedByteCount))
    }

    func downloadAttachment(_ attachment: DownloadAttachment, didAppend chunk: Data, totalByteCount: Int) {
        backlog.add(.chunk(chunk, totalByteCount: totalByteCount))
    }

    func downloadAttachment(_ attachment: DownloadAttachment, didFinishWith outcome: DownloadOutcome) {
        backlog.add(.finish(outcome))
    }
}
