import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import Synchronization
import Testing
import TestSupport
import PipelineLocking

/// Everything one fetch told its delegate, in order.
final class RecordingFetchDelegate: FetchDelegate, Sendable {
    enum Event: Equatable, Sendable {
        case start
        case attempt(ImageLoadSource)
        case progress(Double)
        case final(ImageLoadSource)
        case failure(FetchErrorCode)
        case preview(ImageLoadSource)
        case dirtyPreview
        case progressiveScan
        case firstAnimatedFrame
    }

    /// How previews are answered.
    let previewDecision: PreviewDecision
    /// The answer to "load progressively?".
    let loadsProgressively: Bool
    private let previewList = Locked<[FetchResult]>([])
    private let incrementalList = Locked<[(result: FetchResult, progress: Double)]>([])

    /// The optional callbacks it says it has.
    let implementedCallbacks: FetchDelegateCallbacks

    init(previewDecision: PreviewDecision = .continueLoading, loadsProgressively: Bool = false,
         callbacks: FetchDelegateCallbacks = .all) {
        self.previewDecision = previewDecision
        self.loadsProgressively = loadsProgressively
        implementedCallbacks = callbacks
    }

    func fetchOperation(_ operation: FetchOperation, shouldLoadProgressivelyWithIdentifier identifier: String, url: URL,
                        imageType: ImageType, originalDimensions: PixelSize) -> Bool { loadsProgressively }
    func fetchOperation(_ operation: FetchOperation, didUpdateProgressiveImage result: FetchResult, progress: Double) {
        incrementalList.withLock { $0.append((result, progress)) }
        record(.progressiveScan)
    }
    func fetchOperation(_ operation: FetchOperation, didLoadFirstAnimatedImageFrame result: FetchResult, progress: Double) {
        incrementalList.withLock { $0.append((result, progress)) }
        record(.firstAnimatedFrame)
    }
    /// Progressive scans and first frames delivered, with their progress.
    var incrementalImages: [(result: FetchResult, progress: Double)] { incrementalList.withLock { $0 } }

    private let state = Locked<(events: [Event], result: Result<FetchResult, FetchError>?, finishedBeforeFinal: Bool,
                               waiters: [CheckedContinuation<Void, Never>])>(([], nil, false, []))

    func fetchOperationDidStart(_ operation: FetchOperation) { record(.start) }
    func fetchOperation(_ operation: FetchOperation, willAttemptToLoadFrom source: ImageLoadSource) { record(.attempt(source)) }
    func fetchOperation(_ operation: FetchOperation, didUpdateProgress progress: Double) { record(.progress(progress)) }
    func fetchOperation(_ operation: FetchOperation, didLoadDirtyPreviewImage result: FetchResult) {
        previewList.withLock { $0.append(result) }
        record(.dirtyPreview)
    }
    func fetchOperation(_ operation: FetchOperation, didLoadPreviewImage result: FetchResult,
                        completion: @escaping @Sendable (PreviewDecision) -> Void) {
        previewList.withLock { $0.append(result) }
        record(.preview(result.source))
        completion(previewDecision)
    }
    var previews: [FetchResult] { previewList.withLock { $0 } }
    func fetchOperation(_ operation: FetchOperation, didLoadFinalImage result: FetchResult) {
        finish(.final(result.source), .success(result), operation)
    }
    func fetchOperation(_ operation: FetchOperation, didFailToLoadFinalImageWith error: FetchError) {
        finish(.failure(error.code), .failure(error), operation)
    }

    private func record(_ event: Event) { state.withLock { $0.events.append(event) } }

    private func finish(_ event: Event, _ result: Result<FetchResult, FetchError>, _ operation: FetchOperation) {
        let waiters = state.withLock { state in
            state.events.append(event)
            state.result = result
            state.finishedBeforeFinal = operation.isFinished
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }

    /// Waits for the final callback.
    func finished() async -> Result<FetchResult, FetchError> {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.result != nil { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
        return state.withLock { $0.result! }
    }

    var events: [Event] { state.withLock { $0.events } }
    var attempts: [ImageLoadSource] { events.compactMap { if case .attempt(let source) = $0 { source } else { nil } } }
    var progresses: [Double] { events.compactMap { if case .progress(let value) = $0 { value } else { nil } } }
    var operationWasFinishedAtFinalCallback: Bool { state.withLock { $0.finishedBeforeFinal } }
}

/// A loopback origin serving a real JPEG at `/a.jpg` and a pipeline on a configuration of its own whose
/// delegate queue is a private serial queue and whose downloader is of the kind under test.
struct FetchHarness {
    static let delegateQueueLabel = "fetch-tests.delegate"
    static let queueKey = DispatchSpecificKey<String>()
    let server: ImageOriginServer
    let configuration: GlobalConfiguration
    let pipeline: ImagePipeline
    let image: Data
    let imageSize: PixelSize
    let problems: ProblemLog
    let root: URL

    static func run(_ kind: CoordinatorDownloader, _ body: (FetchHarness) async throws -> Void) async throws {
        let server = try await ImageOriginServer.start(port: 0)
        let image = try Data(contentsOf: CoordinatorHarness.imageURL)
        server.setAsset(image, at: "/a.jpg", contentType: "image/jpeg")
        server.setShaping(OriginShaping(bytesPerSecond: 2_000_000))
        let configuration = GlobalConfiguration()
        let delegateQueue = DispatchQueue(label: delegateQueueLabel)
        delegateQueue.setSpecific(key: queueKey, value: delegateQueueLabel)
        configuration.delegateQueue = delegateQueue
        let downloader: any ImageDownloader = switch kind {
        case .urlSession: URLSessionDownloader()
        case .httpClient: HTTPClientDownloader()
        }
        configuration.imageDownloader = downloader
        let problems = ProblemLog()
        configuration.problemObserver = problems
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-fetch-\(UUID().uuidString)")
        let pipeline = try ImagePipeline(identifier: "fetch" + String(UUID().uuidString.prefix(8)), configuration: configuration,
                                         cacheRoot: root)
        let size = try CodecCatalogue.shared.decode(image).properties.dimensions
        let harness = FetchHarness(server: server, configuration: configuration, pipeline: pipeline, image: image,
                                   imageSize: size, problems: problems, root: root)
        var failure: (any Error)?
        do { try await body(harness) } catch { failure = error }
        try await (downloader as? HTTPClientDownloader)?.shutdown()
        try await server.shutdown()
        try? FileManager.default.removeItem(at: root)
        if let failure { throw failure }
    }

    func request(_ path: String = "/a.jpg", identifier: String? = "I", target: PixelSize? = nil,
                 mode: ContentMode = .fit, sources: LoadingSources = .all, options: FetchOptions = []) -> GenericFetchRequest {
        GenericFetchRequest(url: server.url(for: path), identifier: identifier,
                            targetSizing: TargetSizing(dimensions: target, contentMode: mode), options: options, loadingSources: sources)
    }

    /// Runs a fetch to its end and returns its delegate.
    func fetch(_ request: any FetchRequest, in pipeline: ImagePipeline? = nil,
               previewDecision: PreviewDecision = .continueLoading,
               callbacks: FetchDelegateCallbacks = .all) async -> (RecordingFetchDelegate, FetchOperation) {
        let delegate = RecordingFetchDelegate(previewDecision: previewDecision, callbacks: callbacks)
        let operation = (pipeline ?? self.pipeline).operation(with: request, delegate: delegate)
        (pipeline ?? self.pipeline).fetchImage(with: operation)
        // Bounded: a fetch that never finishes fails the test with what it had done instead of hanging the run.
        let finished = (try? await eventually(timeout: .seconds(20)) { operation.isFinished }) ?? false
        if !finished {
            Issue.record("the fetch did not finish: state \(operation.state), executing \(operation.isExecuting), events \(delegate.events)")
        }
        return (delegate, operation)
    }

    /// Starts a fetch of `/a.jpg`, slowed and stalled at 60% for that one request, and cancels it once the
    /// delegate has seen `progress`: the cancel lands mid-body however far the fetch's queue lags behind the
    /// network on a loaded machine (progress is what the fetch has processed, not what arrived). Returns once
    /// the fetch has ended, its partial image kept.
    func cancelHalfway(atProgress progress: Double = 0.3) async throws -> (RecordingFetchDelegate, FetchOperation) {
        server.stallNextResponse(to: "/a.jpg", afterBytes: image.count * 6 / 10)
        let delegate = RecordingFetchDelegate()
        let operation = pipeline.operation(with: request(), delegate: delegate)
        pipeline.fetchImage(with: operation)
        #expect(try await eventually { (delegate.progresses.last ?? 0) >= progress })
        operation.cancel()
        _ = await delegate.finished()
        return (delegate, operation)
    }

    /// Runs `body` on the delegate queue and waits for it.
    func onDelegateQueue<T: Sendable>(_ body: @Sendable () -> T) -> T { configuration.delegateQueue.sync(execute: body) }
}

@Suite("Fetch operations over loopback: the source walk, synchronous rendered hits, percolation", .serialized)
struct FetchOperationTests {
    @Test("Scenario 4: a cold fetch tries memory, disk, additional caches, then one request; progress rises and stays below 1", arguments: CoordinatorDownloader.allCases)
    func coldFetch(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let stored = Recorded<StoredImageInfo>()
            let token = NotificationCenter.default.addObserver(forName: ImagePipeline.didStoreCachedImageNotification,
                                                               object: h.pipeline, queue: nil) { note in
                if let info = StoredImageInfo(notification: note) { stored.append(info) }
            }
            defer { NotificationCenter.default.removeObserver(token) }
            let (delegate, operation) = await h.fetch(h.request())
            #expect(delegate.events.first == .start)
            #expect(delegate.attempts == [.memoryCache, .diskCache, .additionalCache, .network])
            #expect(delegate.progresses == delegate.progresses.sorted() && delegate.progresses.allSatisfy { $0 <= 0.999 })
            #expect(delegate.events.last == .final(.network))
            #expect(!delegate.operationWasFinishedAtFinalCallback && operation.isFinished)
            #expect(operation.state == .succeeded && operation.progress == 1)
            #expect(operation.finalResult?.image.dimensions == h.imageSize)
            #expect(operation.finalResult?.originalDimensions == h.imageSize)
            #expect(h.server.requestLog.count == 1)
            #expect(isSameBytes(h.pipeline.diskCache?.entry(for: "I")?.complete?.data, h.image))
            #expect(h.pipeline.memoryCache.entry(for: "I")?.complete?.dimensions == h.imageSize)
            #expect(try await eventually { stored.count == 1 } && stored.all.first?.wasManuallyStored == false)
        }
    }

    @Test("Scenario 27: memory and disk only, with empty caches: code 6 and no request", arguments: CoordinatorDownloader.allCases)
    func sourcesExhausted(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let (delegate, operation) = await h.fetch(h.request(sources: [.memoryCache, .diskCache]))
            #expect(delegate.attempts == [.memoryCache, .diskCache])
            #expect(delegate.events.last == .failure(.couldNotLoadImage) && operation.state == .failed)
            #expect(h.server.requestLog.isEmpty)
        }
    }

    @Test("Scenarios 21 and 22: a fetch cancelled halfway leaves a partial; the next resumes it from memory, or from disk once memory is cleared", arguments: CoordinatorDownloader.allCases)
    func resumeAcrossFetches(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let (delegate, operation) = try await h.cancelHalfway()
            #expect(await delegate.finished().isCancelled)
            #expect(operation.state == .cancelled)
            // Metrics: the cancel is on the metrics, on the network source that never completed.
            #expect(operation.metrics?.wasCancelled == true && operation.metrics?.info(for: .network)?.wasCancelled == true)
            #expect(operation.metrics?.info(for: .network)?.result == .neverCompleted)
            let kept = try #require(h.pipeline.memoryCache.entry(for: "I")?.partial)
            #expect(isSameBytes(h.pipeline.diskCache?.entry(for: "I")?.partial?.data, kept.data))

            let (resumed, resumedOperation) = await h.fetch(h.request())
            #expect(resumed.attempts == [.memoryCache, .networkResumed])
            #expect(resumed.events.last == .final(.networkResumed) && resumedOperation.finalResult?.source == .networkResumed)
            #expect((resumed.progresses.first ?? 0) >= Double(kept.data.count) / Double(h.image.count) - 0.001)
            #expect(!resumed.progresses.contains(0))
            // The metrics say NetworkResumed, and nothing for Network.
            #expect(resumedOperation.metrics?.info(for: .networkResumed)?.result == .hitFinal)
            #expect(resumedOperation.metrics?.info(for: .network) == nil)
            #expect(resumedOperation.metrics?.info(for: .networkResumed)?.networkImageSizeInBytes == h.image.count)
            try await h.server.waitForCompletedRequests(count: 2)
            #expect(h.server.requestLog.last?.range == "bytes=\(kept.data.count)-")
            #expect(isSameBytes(h.pipeline.diskCache?.entry(for: "I")?.complete?.data, h.image))
            #expect(h.pipeline.diskCache?.entry(for: "I")?.partial == nil)

            // Scenario 22: the same from disk.
            h.pipeline.clearImage(identifier: "I")
            _ = try await h.cancelHalfway()
            h.pipeline.clearMemoryCaches()
            let (fromDisk, _) = await h.fetch(h.request())
            #expect(fromDisk.attempts == [.memoryCache, .diskCache, .networkResumed])
            #expect(fromDisk.events.last == .final(.networkResumed))
        }
    }

    @Test("Scenario 28: two fetches of one image share a download; cancelling the first leaves the second to succeed", arguments: CoordinatorDownloader.allCases)
    func sharedFetches(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            h.server.setShaping(OriginShaping(bytesPerSecond: 200_000), for: "/a.jpg")
            let first = RecordingFetchDelegate(), second = RecordingFetchDelegate()
            let a = h.pipeline.operation(with: h.request(), delegate: first)
            let b = h.pipeline.operation(with: h.request(), delegate: second)
            h.pipeline.fetchImage(with: a)
            try await Task.sleep(for: .milliseconds(100))
            h.pipeline.fetchImage(with: b)
            #expect(try await eventually { !second.progresses.isEmpty })
            a.cancel()
            #expect(await first.finished().isCancelled)
            #expect(try await second.finished().get().image.dimensions == h.imageSize)
            #expect(h.server.requestLog.count == 1)
        }
    }

    @Test("Scenario 38: releasing the delegate during the download cancels the fetch; discarding it lets the fetch finish", arguments: CoordinatorDownloader.allCases)
    func delegateLifetime(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            h.server.stallNextResponse(to: "/a.jpg")
            var delegate: RecordingFetchDelegate? = RecordingFetchDelegate()
            let operation = h.pipeline.operation(with: h.request(), delegate: delegate)
            h.pipeline.fetchImage(with: operation)
            #expect(try await eventually { (delegate?.progresses.count ?? 0) > 0 })
            delegate = nil
            #expect(try await eventually { operation.isFinished })
            #expect(operation.state == .cancelled)

            let kept = RecordingFetchDelegate()
            let discarded = h.pipeline.operation(with: h.request("/a.jpg", identifier: "D"), delegate: kept)
            h.pipeline.fetchImage(with: discarded)
            #expect(try await eventually { !kept.progresses.isEmpty })
            discarded.discardDelegate()
            #expect(try await eventually { discarded.isFinished })
            #expect(discarded.state == .succeeded)
            #expect(!kept.events.contains { if case .final = $0 { true } else { false } })
        }
    }

    @Test("Scenario 54: another live pipeline's disk entry with the same URL is copied in, without a request; another URL is not", arguments: CoordinatorDownloader.allCases)
    func crossPipeline(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            _ = await h.fetch(h.request())
            let other = try ImagePipeline(identifier: h.pipeline.identifier + "-2", configuration: h.configuration, cacheRoot: h.root)
            let (delegate, _) = await h.fetch(h.request(), in: other)
            #expect(delegate.events.last == .final(.diskCache))
            #expect(isSameBytes(other.diskCache?.entry(for: "I")?.complete?.data, h.image))
            #expect(h.server.requestLog.count == 1)
            h.server.setAsset(h.image, at: "/b.jpg", contentType: "image/jpeg")
            let (elsewhere, _) = await h.fetch(h.request("/b.jpg", identifier: "I2"), in: other)
            #expect(elsewhere.events.last == .final(.network))
        }
    }

    @Test("Scenario 55: additional caches are asked by URL in order; their image is final and not written to memory or disk", arguments: CoordinatorDownloader.allCases)
    func additionalCaches(kind: CoordinatorDownloader) async throws {
        struct Cache: AdditionalImageCache {
            let answer: ImageContainer?
            let asked: Recorded<URL>
            func image(for url: URL) async -> ImageContainer? {
                asked.append(url)
                return answer
            }
        }
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let asked = Recorded<URL>()
            let image = try CodecCatalogue.shared.decode(h.image).container
            h.pipeline.additionalCaches = [Cache(answer: nil, asked: asked), Cache(answer: image, asked: asked)]
            let (delegate, operation) = await h.fetch(h.request())
            #expect(delegate.events.last == .final(.additionalCache) && operation.finalResult?.image.dimensions == h.imageSize)
            #expect(asked.all == [h.server.url(for: "/a.jpg"), h.server.url(for: "/a.jpg")])
            #expect(h.pipeline.memoryCache.entry(for: "I") == nil && h.pipeline.diskCache?.entry(for: "I") == nil)
            #expect(h.server.requestLog.isEmpty)
        }
    }

    @Test("The block API calls its completion once on the delegate queue, and priority reaches the queued operation", arguments: CoordinatorDownloader.allCases)
    func blockAPI(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let queueLabel = Recorded<String>()
            let result: Result<FetchResult, FetchError> = await withCheckedContinuation { continuation in
                let operation = h.pipeline.operation(with: h.request()) { result in
                    queueLabel.append(DispatchQueue.getSpecific(key: FetchHarness.queueKey) ?? "another queue")
                    continuation.resume(returning: result)
                }
                operation.priority = .high
                #expect(operation.queuePriority == .high)
                h.pipeline.fetchImage(with: operation)
            }
            #expect(try result.get().source == .network)
            #expect(queueLabel.all == [FetchHarness.delegateQueueLabel])
        }
    }
}

extension Result where Failure == FetchError {
    var isCancelled: Bool { if case .failure(let error) = self { error.code == .cancelled } else { false } }
}
