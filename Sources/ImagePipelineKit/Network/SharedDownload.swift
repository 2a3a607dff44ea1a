import Foundation

/// One download and the fetches that share it. Lives on the coordinator's queue (every method is
/// `_queue_…`); the downloader's events reach it there through a ``DownloadEventRelay``, by way of the queue of
/// the fetch that started it.
final class SharedDownload: @unchecked Sendable {
    // @unchecked: every stored property is read and written only on `coordinator.queue`.

    private enum Phase { case waiting, preparing, running, finished }

    let request: ImageDownloadRequest
    /// The request's ``ImageDownloadRequest/sharingKey``, built once: the coordinator files the download under
    /// it, and the key's strings (the URL, every header) cost more to build than to hash.
    let sharingKey: ImageDownloadRequest.SharingKey?
    let sequence: Int
    let coordinator: DownloadCoordinator
    private var phase = Phase.waiting
    /// The fetches, owner (the one that created it) first.
    private var attachments: [DownloadAttachment]
    private(set) var priority: Operation.QueuePriority
    private var task: (any ImageDownloadTask)?
    /// Bumped whenever a task is replaced (a 416 retry), so a stale task's late events are ignored.
    private var attempt = 0
    /// When the current attempt's request was sent: the start of its time to first byte and duration.
    private var sentAt = ContinuousClock.now
    /// The partial being resumed by the current attempt, if any.
    private var resuming: PartialImageData?
    private var response: DownloadResponse?
    private var bytes = Data()
    private var expectedByteCount: Int?
    private var wasResumed = false
    /// Set while suspended (and until the answer to the request that continues it): the bytes the fetches have,
    /// with the validators the server is asked to continue them against.
    private var continuation: PartialImageData?
    /// Bytes at the start of a `200` answer to a continuation that the fetches have already: skipped.
    private var bytesToSkip = 0
    /// Where the shares of its bursts go to the fetches that joined it (see ``DownloadFanOut``); made for the
    /// first one.
    private(set) lazy var _queue_fanOutQueue = DispatchQueue(label: "ImagePipelineKit.DownloadFanOut")

    init(coordinator: DownloadCoordinator, request: ImageDownloadRequest, sharingKey: ImageDownloadRequest.SharingKey?,
         sequence: Int, owner: DownloadAttachment) {
        self.coordinator = coordinator
        self.request = request
        self.sharingKey = sharingKey
        self.sequence = sequence
        attachments = [owner]
        priority = owner.priority
        owner.download = self
    }

    var isFinished: Bool { phase == .finished }

    /// Background work: every fetch of it is at `.veryLow` (see ``DownloadCoordinator/yieldsBackgroundDownloads``).
    var isBackground: Bool { priority == .veryLow }

    // MARK: - Fetches joining and leaving

    /// Adds a fetch; once the queue gets to it, it is sent the response and the bytes so far, in order with
    /// everything that follows.
    func _queue_join(_ attachment: DownloadAttachment) {
        attachment.download = self
        attachments.append(attachment)
        guard response != nil else { return }
        attachment.isCaughtUp = false
        coordinator.queue.async { [self] in
            guard !attachment.isDetached, let response else { return }
            attachment.isCaughtUp = true
            attachment.client.downloadAttachment(attachment, didReceive: response, resumedByteCount: 0,
                                          expectedByteCount: expectedByteCount)
            if !bytes.isEmpty {
                attachment.client.downloadAttachment(attachment, didAppend: bytes, totalByteCount: bytes.count)
            }
        }
    }

    /// A fetch leaves. The last one to leave stops the download and takes the partial image with it.
    func _queue_detach(_ attachment: DownloadAttachment) {
        attachments.removeAll { $0 === attachment }
        guard attachments.isEmpty, phase != .finished else {
            _queue_deliver(.failure(.cancelled, partial: nil), to: attachment)
            _queue_updatePriority()
            return
        }
        let partial = _queue_resumablePartial()
        _queue_finish(cancellingTask: true)
        _queue_deliver(.failure(.cancelled, partial: partial), to: attachment)
    }

    func _queue_updatePriority() {
        let highest = attachments.map(\.priority).max { $0.rawValue < $1.rawValue } ?? priority
        guard highest != priority else { return }
        let wasBackground = isBackground
        priority = highest
        if isBackground != wasBackground { coordinator._queue_rebalance() }
        if let task {
            // Off the queue: a downloader may take its own lock, which its event thread holds while it waits
            // for this queue.
            DispatchQueue.global().async { task.priority = highest }
        }
    }

    // MARK: - Starting

    /// Hydrates and authorises the request (asynchronously: those are user closures), then starts the
    /// downloader. Fails every fetch when a closure throws or the hydration changed the URL.
    func _queue_start() {
        phase = .preparing
        let request = self.request
        var headers = request.headers
        // The formats the pipeline can decode, unless the request says otherwise: a server that negotiates then
        // answers with one of them.
        if !headers.contains("Accept") { headers.add(name: "Accept", value: CodecCatalogue.shared.acceptHeaderValue) }
        let initial = DownloadRequest(url: request.url, headers: headers, priority: priority, limits: request.limits)
        // Most requests have neither closure: the download starts at once, on the thread that runs the queue
        // (inside `load`, the fetch's own), with no block of the queue to wake a thread for. A downloader
        // reports nothing from inside its start (``ImageDownloader/startDownload(_:delegate:)``).
        guard request.hydration != nil || request.authorization != nil else {
            return _queue_prepared(.success(initial))
        }
        Task { [self] in
            let prepared = await Self.prepare(initial, hydration: request.hydration, authorization: request.authorization)
            coordinator.queue.async { self._queue_prepared(prepared) }
        }
    }

    /// Runs the user's hydration, then authorization, off the queue.
    private static func prepare(
        _ request: DownloadRequest, hydration: ImageDownloadRequest.Hydration?, authorization: ImageDownloadRequest.Authorization?
    ) async -> Result<DownloadRequest, ImageDownloadError> {
        var request = request
        if let hydration {
            do {
                let hydrated = try await hydration(request)
                guard hydrated.url == request.url else { return .failure(.illegalHydrationModification) }
                request = hydrated
            } catch {
                return .failure(.hydration(error))
            }
        }
        if let authorization {
            do {
                if let value = try await authorization(request) {
                    request.headers.replaceOrAdd(name: "Authorization", value: value)
                }
            } catch {
                return .failure(.authorization(error))
            }
        }
        return .success(request)
    }

    private func _queue_prepared(_ prepared: Result<DownloadRequest, ImageDownloadError>) {
        guard phase == .preparing else { return }   // every fetch left meanwhile
        switch prepared {
        case .failure(let error):
            _queue_finish(cancellingTask: false)
            for attachment in attachments { _queue_deliver(.failure(error, partial: nil), to: attachment) }
        case .success(var download):
            phase = .running
            download.priority = priority
            resuming = nil
            if let continuation, let validator = continuation.ifRangeValidator {
                // Continuing after a suspension: the fetches have these bytes already.
                download.headers.replaceOrAdd(name: "Range", value: "bytes=\(continuation.data.count)-")
                download.headers.replaceOrAdd(name: "If-Range", value: validator)
            } else if let partial = request.partial, !partial.data.isEmpty, let validator = partial.ifRangeValidator {
                download.headers.replaceOrAdd(name: "Range", value: "bytes=\(partial.data.count)-")
                download.headers.replaceOrAdd(name: "If-Range", value: validator)
                resuming = partial
            } else {
                for field in request.conditionalHeaders { download.headers.replaceOrAdd(name: field.name, value: field.value) }
            }
            _queue_send(download)
        }
    }

    private func _queue_send(_ download: DownloadRequest) {
        attempt += 1
        sentAt = .now
        let relay = DownloadEventRelay(download: self, attempt: attempt, request: download,
                                       queue: (attachments.first?.client as? QueueBoundDownloadClient)?.eventQueue)
        task = coordinator.downloader.startDownload(download, delegate: relay)
    }

    // MARK: - Downloader events (relayed onto the queue)

    func _queue_didReceive(_ response: DownloadResponse, attempt: Int, request: DownloadRequest) {
        guard attempt == self.attempt, phase == .running else { return }
        coordinator.configurationForMetrics.recordDownloadTimeToFirstByte(.now - sentAt, status: response.statusCode)
        if let continuation { return _queue_continue(continuation, answeredBy: response) }
        if let partial = resuming {
            switch response.statusCode {
            case 206 where partial.isContinued(by: response):
                bytes = partial.data
                wasResumed = true
                expectedByteCount = response.contentRangeTotal ?? partial.expectedByteCount
            case 206, 416:
                // The server does not continue where we stopped, or continues another version of the file, or
                // cannot: drop the partial and ask for the whole image once.
                coordinator.log("resume answered \(response.statusCode); reloading without Range", url: request.url)
                _queue_retryWithoutRange(request)
                return
            default:
                expectedByteCount = response.expectedContentLength   // 200: the whole image again
            }
        } else {
            expectedByteCount = response.expectedContentLength
        }
        _queue_reserveBody(for: response)
        self.response = response
        for attachment in attachments where attachment.isCaughtUp {
            attachment.client.downloadAttachment(attachment, didReceive: response, resumedByteCount: wasResumed ? bytes.count : 0,
                                          expectedByteCount: expectedByteCount)
        }
    }

    private func _queue_retryWithoutRange(_ request: DownloadRequest) {
        resuming = nil
        let stale = task
        DispatchQueue.global().async { stale?.cancel() }
        var request = request
        request.headers.remove(name: "Range")
        request.headers.remove(name: "If-Range")
        request.priority = priority
        _queue_send(request)
    }

    /// Sizes the body buffer once from the announced length, so that a 200 KB image is not copied through
    /// every doubling of its buffer (with the page faults of each new one) as its chunks arrive. The length
    /// is only a claim: the reservation is capped, and what the server really sends is bounded elsewhere
    /// (``DownloadLimits/maxResponseBytes``).
    private func _queue_reserveBody(for response: DownloadResponse) {
        guard Self.isImageStatus(response.statusCode), let expected = expectedByteCount, expected > bytes.count else { return }
        bytes.reserveCapacity(min(expected, Self.maxReservedBodyBytes))
    }

    /// The most a `Content-Length` can make a download reserve up front.
    static let maxReservedBodyBytes = 16 << 20

    func _queue_didReceive(_ chunk: Data, attempt: Int) {
        guard attempt == self.attempt, phase == .running, let response, Self.isImageStatus(response.statusCode) else { return }
        guard !attachments.isEmpty else {
            _queue_finish(cancellingTask: true)
            return
        }
        var chunk = chunk
        if bytesToSkip > 0 {
            let skipped = min(bytesToSkip, chunk.count)
            bytesToSkip -= skipped
            chunk = chunk.dropFirst(skipped)
            guard !chunk.isEmpty else { return }
        }
        bytes.append(chunk)
        for attachment in attachments where attachment.isCaughtUp {
            attachment.client.downloadAttachment(attachment, didAppend: chunk, totalByteCount: bytes.count)
        }
    }

    func _queue_didComplete(_ error: DownloadError?, attempt: Int) {
        guard attempt == self.attempt, phase == .running else { return }
        // The owner (first fetch) gets the partial on failure and stores the bytes on success, as in TIP: the
        // fetches that joined later get the image but never write it, so it is stored once.
        let outcome: (_ isOwner: Bool) -> DownloadOutcome
        if let response, response.statusCode == 304, !request.conditionalHeaders.isEmpty {
            // The cached image is current. A 304 has no body, so a transport error after its head lost nothing.
            outcome = { _ in .notModified(response) }
        } else if let response, Self.isImageStatus(response.statusCode) {
            // Judged on the bytes, not the transport, as TIP came to do: CDNs often end a response badly after
            // its last byte, and failing that image would only make it download again. All of a known length
            // is the image.
            // Without a length, the end of the connection is the end of the body, so a cut connection looks
            // complete: the image format decides.
            let whole = expectedByteCount.map { $0 > 0 && bytes.count == $0 }
                ?? (error == nil && ImageCompleteness.isComplete(bytes) != false)
            if whole {
                if let error {
                    coordinator.report(.imageDownloadedWithUnnecessaryError(identifier: request.identifier, error: error))
                }
                let result = DownloadResult(data: bytes, response: response, wasResumed: wasResumed, isOwner: false,
                                               unnecessaryError: error)
                if let key = sharingKey, let owner = attachments.first, owner.sharesResultUntilStored {
                    coordinator._queue_keepUnstored(result, key: key, owner: owner)
                }
                outcome = { isOwner in
                    var result = result
                    result.isOwner = isOwner
                    return .success(result)
                }
            } else {
                let partial = _queue_resumablePartial()
                let failure = error.map(ImageDownloadError.download) ?? .truncatedImage
                outcome = { isOwner in .failure(failure, partial: isOwner ? partial : nil) }
            }
        } else {
            let failure: ImageDownloadError = response.map { .httpStatus($0.statusCode) }
                ?? .download(error ?? .transport(description: "no response"))
            outcome = { _ in .failure(failure, partial: nil) }
        }
        let fetches = attachments
        let ownerOutcome = outcome(true)
        let failed = if case .failure = ownerOutcome { true } else { false }
        coordinator.configurationForMetrics.recordDownloadDuration(.now - sentAt, complete: !failed)
        _queue_finish(cancellingTask: false)
        for (index, attachment) in fetches.enumerated() { _queue_deliver(index == 0 ? ownerOutcome : outcome(false), to: attachment) }
    }

    // MARK: - Suspending

    /// Stops the transfer of a background download for the coordinator to start again later: the fetches stay
    /// attached, and the download continues where it stopped. Only a download that can: one with no response
    /// yet (it starts over, and nobody has seen anything), or one whose server takes byte ranges and gave a
    /// validator. Returns `false`, and goes on, otherwise.
    func _queue_suspend() -> Bool {
        guard phase == .running, continuation == nil, bytesToSkip == 0 else { return false }
        if response != nil {
            guard let partial = _queue_resumablePartial() else { return false }
            continuation = partial
        }
        // A new attempt: the stopped task's late events are ignored.
        attempt += 1
        let stopped = task
        task = nil
        DispatchQueue.global().async { stopped?.cancel() }
        phase = .waiting
        coordinator.log("download suspended at \(bytes.count) bytes for more urgent downloads", url: request.url)
        return true
    }

    /// The answer to a request that continues a suspended download. A `206` from where it stopped goes on; a
    /// `200` of the same version (its validators unchanged) is read past the bytes the fetches have; anything
    /// else fails the fetches, since the bytes they have belong to a version the server no longer sends.
    private func _queue_continue(_ continuation: PartialImageData, answeredBy answer: DownloadResponse) {
        self.continuation = nil
        switch answer.statusCode {
        case 206 where continuation.isContinued(by: answer):
            return
        case 200 where continuation.isSameVersion(as: answer):
            bytesToSkip = continuation.data.count
            return
        default:
            coordinator.log("continuing was answered \(answer.statusCode) for another version", url: request.url)
            let fetches = attachments
            _queue_finish(cancellingTask: true)
            let error = DownloadError.transport(description: "the image changed while its download was suspended")
            for attachment in fetches { _queue_deliver(.failure(.download(error), partial: nil), to: attachment) }
        }
    }

    // MARK: - Ending

    private func _queue_finish(cancellingTask: Bool) {
        phase = .finished
        if cancellingTask, let task { DispatchQueue.global().async { task.cancel() } }
        task = nil
        coordinator._queue_downloadEnded(self)
    }

    private func _queue_deliver(_ outcome: DownloadOutcome, to attachment: DownloadAttachment) {
        guard !attachment.isDetached else { return }
        attachment.isDetached = true
        attachment.download = nil
        attachment.client.downloadAttachment(attachment, didFinishWith: outcome)
    }

    /// The bytes so far as a partial image to resume later, when the server allows it (as in TIP: it accepts
    /// byte ranges and gave a validator to resume against; here a strong ETag counts as well as Last-Modified).
    private func _queue_resumablePartial() -> PartialImageData? {
        guard let response, response.statusCode == 200 || response.statusCode == 206, !bytes.isEmpty,
              let expected = expectedByteCount, bytes.count < expected else { return nil }
        let acceptsRanges = response.statusCode == 206
            || response.headers.values(for: "Accept-Ranges").contains { $0.lowercased().contains("bytes") }
        let partial = PartialImageData(
            data: bytes, url: request.url, dimensions: request.partial?.dimensions, expectedByteCount: expected,
            lastModified: response.headers["Last-Modified"] ?? (wasResumed ? request.partial?.lastModified : nil),
            entityTag: response.headers["ETag"] ?? (wasResumed ? request.partial?.entityTag : nil))
        return acceptsRanges && partial.ifRangeValidator != nil ? partial : nil
    }

    private static func isImageStatus(_ status: Int) -> Bool { status == 200 || status == 206 }
}
