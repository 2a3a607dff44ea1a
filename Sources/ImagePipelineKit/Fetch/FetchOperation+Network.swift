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
            // A fetch cancelled as its last bytes came in (its cell scrolled off, say) does not decode them
            // (TIP's abort check before every step).
            guard !_queue_abortIfNeeded() else { return owned?.resultStored() ?? () }
            _queue_deliverDownloaded(result, owned: owned)
        }
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
/// burst go in one block (``QueueBacklog``), and its chunks are taken together. The fetch that started the
/// download names its queue as the download's `eventQueue`: the coordinator takes the events there, so this
/// fetch's block is appended to the running one and no thread wakes for it. A fetch that joined the download
/// takes its block as a block of its queue on the shared pool, and with a thread per fetch in place, with the
/// other joined fetches' (``DownloadFanOut``).
final class FetchDownloadClient: QueueBoundDownloadClient {
    private enum Event: Sendable {
        case response(DownloadResponse, resumedByteCount: Int, expectedByteCount: Int?)
        case chunk(Data, totalByteCount: Int)
        case finish(DownloadOutcome)
    }

    private let backlog: QueueBacklog<Event>
    let eventQueue: DispatchQueue
    /// Whether this fetch takes its share of a download it joined in place, with the other joined fetches'; on a
    /// shared pool it takes it as a block of its queue instead (see ``FetchOperation/runFromAnotherThread(holdingOpen:_:)``).
    private let takesSharesInPlace: Bool

    init(operation: FetchOperation) {
        eventQueue = operation.queue
        takesSharesInPlace = !operation.runsOnSharedPool
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

    private func fanOut(of attachment: DownloadAttachment) -> DownloadFanOut? {
        takesSharesInPlace ? attachment._queue_fanOut : nil
    }

    func downloadAttachment(_ attachment: DownloadAttachment, didReceive response: DownloadResponse, resumedByteCount: Int,
                     expectedByteCount: Int?) {
        backlog.add(.response(response, resumedByteCount: resumedByteCount, expectedByteCount: expectedByteCount),
                    fanOut: fanOut(of: attachment))
    }

    func downloadAttachment(_ attachment: DownloadAttachment, didAppend chunk: Data, totalByteCount: Int) {
        backlog.add(.chunk(chunk, totalByteCount: totalByteCount), fanOut: fanOut(of: attachment))
    }

    func downloadAttachment(_ attachment: DownloadAttachment, didFinishWith outcome: DownloadOutcome) {
        backlog.add(.finish(outcome), fanOut: fanOut(of: attachment))
    }
}
