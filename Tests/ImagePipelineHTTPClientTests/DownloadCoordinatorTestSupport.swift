import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import Testing
import TestSupport
import PipelineLocking

/// The downloaders the coordinator is tested over.
enum CoordinatorDownloader: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case urlSession, httpClient
    var testDescription: String { rawValue }
}

/// A started origin serving a real JPEG at `/a.jpg`, a coordinator over one downloader, torn down afterwards.
struct CoordinatorHarness {
    let server: ImageOriginServer
    let coordinator: DownloadCoordinator
    let problems: ProblemLog
    let image: Data

    static let imageURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("SampleCLI/Images/skimage-rocket.jpg")

    static func run(_ kind: CoordinatorDownloader, wrap: (any ImageDownloader) -> any ImageDownloader = { $0 },
                    _ body: (CoordinatorHarness) async throws -> Void) async throws {
        let server = try await ImageOriginServer.start(port: 0)
        let image = try Data(contentsOf: imageURL)
        server.setAsset(image, at: "/a.jpg", contentType: "image/jpeg")
        // Shaped below NIO's 64 KiB write high-water mark (see DownloaderTestSupport: the origin's unshaped
        // pump stalls past it), and slow enough that a test can act halfway through a download.
        server.setShaping(OriginShaping(bytesPerSecond: 2_000_000))
        let downloader: any ImageDownloader = switch kind {
        case .urlSession: URLSessionDownloader()
        case .httpClient: HTTPClientDownloader()
        }
        let configuration = GlobalConfiguration()
        let problems = ProblemLog()
        configuration.problemObserver = problems
        let harness = CoordinatorHarness(
            server: server, coordinator: DownloadCoordinator(downloader: wrap(downloader), configuration: configuration),
            problems: problems, image: image)
        var failure: (any Error)?
        do { try await body(harness) } catch { failure = error }
        try await (downloader as? HTTPClientDownloader)?.shutdown()
        try await server.shutdown()
        if let failure { throw failure }
    }

    func request(_ path: String = "/a.jpg", identifier: String? = nil, pipeline: String = "p",
                 partial: PartialImageData? = nil) -> ImageDownloadRequest {
        ImageDownloadRequest(url: server.url(for: path), identifier: identifier, pipelineIdentifier: pipeline, partial: partial)
    }

    /// Starts a load and returns its recorder.
    @discardableResult
    func load(_ request: ImageDownloadRequest, priority: Operation.QueuePriority = .normal,
              cancelAfterBytes: Int? = nil) -> LoadRecorder {
        let recorder = LoadRecorder(cancelAfterBytes: cancelAfterBytes)
        recorder.attachment = coordinator.load(request, priority: priority, client: recorder)
        return recorder
    }
}

/// Records one fetch's events; can cancel itself once it has a number of bytes.
final class LoadRecorder: DownloadClient, @unchecked Sendable {
    // @unchecked: `state` is behind its lock; `attachment` is set once, right after `load` returns, before
    // any event can arrive (events come asynchronously, on the coordinator's queue).
    struct State {
        var responses: [(status: Int, resumed: Int, expected: Int?)] = []
        var chunks: [Int] = []
        var totals: [Int] = []
        var body = Data()
        var outcome: DownloadOutcome?
        var waiters: [CheckedContinuation<DownloadOutcome, Never>] = []
    }

    let state = Locked(State())
    let cancelAfterBytes: Int?
    var attachment: DownloadAttachment?

    init(cancelAfterBytes: Int?) { self.cancelAfterBytes = cancelAfterBytes }

    func downloadAttachment(_ attachment: DownloadAttachment, didReceive response: DownloadResponse, resumedByteCount: Int,
                     expectedByteCount: Int?) {
        state.withLock { $0.responses.append((response.statusCode, resumedByteCount, expectedByteCount)) }
    }

    func downloadAttachment(_ attachment: DownloadAttachment, didAppend chunk: Data, totalByteCount: Int) {
        let total = state.withLock { state -> Int in
            state.chunks.append(chunk.count)
            state.totals.append(totalByteCount)
            state.body.append(chunk)
            return totalByteCount
        }
        if let cancelAfterBytes, total >= cancelAfterBytes { attachment.cancel() }
    }

    func downloadAttachment(_ attachment: DownloadAttachment, didFinishWith outcome: DownloadOutcome) {
        let waiters = state.withLock { state in
            precondition(state.outcome == nil, "a second outcome")
            state.outcome = outcome
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume(returning: outcome) }
    }

    func outcome() async -> DownloadOutcome {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> DownloadOutcome? in
                if let outcome = state.outcome { return outcome }
                state.waiters.append(continuation)
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }

    var totals: [Int] { state.withLock { $0.totals } }
    var responses: [(status: Int, resumed: Int, expected: Int?)] { state.withLock { $0.responses } }
    var firstProgressTotal: Int? { state.withLock { $0.totals.first } }
    var firstChunkCount: Int? { state.withLock { $0.chunks.first } }
}

extension DownloadOutcome {
    var result: DownloadResult? { if case .success(let result) = self { result } else { nil } }
    var error: ImageDownloadError? { if case .failure(let error, _) = self { error } else { nil } }
    var partial: PartialImageData? { if case .failure(_, let partial) = self { partial } else { nil } }
    var isCancelled: Bool { if case .failure(.cancelled, _) = self { true } else { false } }
}

// MARK: - Downloader decorators (the real downloader underneath; they only watch or add one event)

/// Records the priorities a downloader is given.
final class PriorityRecordingDownloader: ImageDownloader {
    final class Log: Sendable {
        let started = Locked<[Operation.QueuePriority]>([])
        let changes = Locked<[Operation.QueuePriority]>([])
    }

    final class RecordingTask: ImageDownloadTask {
        let base: any ImageDownloadTask
        let log: Log
        init(base: any ImageDownloadTask, log: Log) {
            self.base = base
            self.log = log
        }
        var request: DownloadRequest { base.request }
        var priority: Operation.QueuePriority {
            get { base.priority }
            set {
                log.changes.withLock { $0.append(newValue) }
                base.priority = newValue
            }
        }
        func cancel() { base.cancel() }
    }

    let base: any ImageDownloader
    let log: Log
    init(base: any ImageDownloader, log: Log) {
        self.base = base
        self.log = log
    }

    func startDownload(_ request: DownloadRequest, delegate: any ImageDownloadDelegate) -> any ImageDownloadTask {
        log.started.withLock { $0.append(request.priority) }
        return RecordingTask(base: base.startDownload(request, delegate: delegate), log: log)
    }
}

/// Passes every real event through, then replaces a clean completion with `idleTimedOut`: a transport that
/// fails after the last byte (a CDN closing badly), which a well-framed loopback response cannot produce.
final class FailingAtEndDownloader: ImageDownloader {
    final class Relay: ImageDownloadDelegate {
        let base: any ImageDownloadDelegate
        init(base: any ImageDownloadDelegate) { self.base = base }
        func download(_ task: any ImageDownloadTask, didReceive response: DownloadResponse) {
            base.download(task, didReceive: response)
        }
        func download(_ task: any ImageDownloadTask, didReceive chunk: Data) { base.download(task, didReceive: chunk) }
        func download(_ task: any ImageDownloadTask, didCompleteWith error: DownloadError?) {
            base.download(task, didCompleteWith: error ?? .idleTimedOut)
        }
    }

    let base: any ImageDownloader
    init(base: any ImageDownloader) { self.base = base }

    func startDownload(_ request: DownloadRequest, delegate: any ImageDownloadDelegate) -> any ImageDownloadTask {
        base.startDownload(request, delegate: Relay(base: delegate))
    }
}
