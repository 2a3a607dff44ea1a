import Dispatch
import Foundation
import ImageOriginServer
import ImagePipelineKit
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PipelineLocking

// `bench fetch`'s load generator and the server-side tally it is checked against (see FetchBench.swift).
// MARK: - Keeping N downloads in flight

/// One measured (or warm-up) phase: keeps `concurrency` downloads in flight until the time is up, starting the
/// next one from the completion callback of the last, so the harness adds no hop of its own.
final class FetchLoad: Sendable {
    struct Result {
        var completed: Int
        var elapsedSeconds: Double
        /// Sorted, nanoseconds.
        var latencies: [UInt64]
        var bytesPerDownload: Int

        var requestsPerSecond: Double { Double(completed) / elapsedSeconds }
        var megabytesPerSecond: Double { Double(completed * bytesPerDownload) / elapsedSeconds / 1e6 }
        func percentileMicroseconds(_ p: Double) -> Double {
            guard !latencies.isEmpty else { return 0 }
            let index = min(latencies.count - 1, Int((Double(latencies.count) * p).rounded(.up)) - 1)
            return Double(latencies[max(0, index)]) / 1000
        }
    }

    private let downloader: any ImageDownloader
    private let name: String
    private let request: DownloadRequest
    private let expectedBytes: Int
    private let deadline: UInt64
    private let started: UInt64
    private let state: Locked<State>

    private struct State {
        var inFlight = 0
        var latencies: [UInt64] = []
        var lastCompletion: UInt64 = 0
        var failure: FetchBenchError?
        var continuation: CheckedContinuation<Result, any Error>?
    }

    private init(downloader: any ImageDownloader, name: String, url: URL, expectedBytes: Int, seconds: Double) {
        self.downloader = downloader
        self.name = name
        // Tighter than the defaults: a stuck download should fail the bench soon, not after 30 s.
        request = DownloadRequest(url: url, limits: DownloadLimits(connectTimeout: .seconds(5), idleTimeout: .seconds(10)))
        self.expectedBytes = expectedBytes
        started = DispatchTime.now().uptimeNanoseconds
        deadline = started + UInt64(seconds * 1e9)
        var initial = State()
        initial.latencies.reserveCapacity(Int(seconds * 20_000))
        state = Locked(initial)
    }

    static func run(downloader: any ImageDownloader, name: String, url: URL, expectedBytes: Int,
                    concurrency: Int, seconds: Double) async throws -> Result {
        let load = FetchLoad(downloader: downloader, name: name, url: url, expectedBytes: expectedBytes, seconds: seconds)
        return try await withCheckedThrowingContinuation { continuation in
            load.state.withLock { state in
                state.continuation = continuation
                state.inFlight = concurrency
            }
            for _ in 0..<concurrency { load.startOne() }
        }
    }

    private func startOne() {
        let delegate = CountingDelegate(load: self, started: DispatchTime.now().uptimeNanoseconds)
        _ = downloader.startDownload(request, delegate: delegate)
    }

    // Runs on the finished download's queue.
    fileprivate func completed(startedAt: UInt64, status: Int?, bytes: Int, error: DownloadError?) {
        let now = DispatchTime.now().uptimeNanoseconds
        let problem: FetchBenchError? = if let error {
            .downloadFailed(downloader: name, error)
        } else if status != 200 {
            .unexpectedStatus(downloader: name, status ?? 0)
        } else if bytes != expectedBytes {
            .wrongLength(downloader: name, expected: expectedBytes, received: bytes)
        } else {
            nil
        }
        enum Next { case startAnother, wait, finish(CheckedContinuation<Result, any Error>, Swift.Result<Result, any Error>) }
        let next = state.withLock { state -> Next in
            if let problem, state.failure == nil { state.failure = problem }
            if state.failure == nil {
                state.latencies.append(now - startedAt)
                state.lastCompletion = now
                if now < deadline { return .startAnother }
            }
            state.inFlight -= 1
            guard state.inFlight == 0, let continuation = state.continuation else { return .wait }
            state.continuation = nil
            if let failure = state.failure { return .finish(continuation, .failure(failure)) }
            state.latencies.sort()
            let elapsed = Double(state.lastCompletion - started) / 1e9
            return .finish(continuation, .success(Result(completed: state.latencies.count, elapsedSeconds: elapsed,
                                                         latencies: state.latencies, bytesPerDownload: expectedBytes)))
        }
        switch next {
        case .startAnother: startOne()
        case .wait: break
        case .finish(let continuation, let result): continuation.resume(with: result)
        }
    }
}

/// Counts one download's body bytes; does not keep them (the bench measures transport, not buffering).
private final class CountingDelegate: ImageDownloadDelegate {
    private let load: FetchLoad
    private let started: UInt64
    private let progress = Locked<(status: Int?, bytes: Int)>((nil, 0))

    init(load: FetchLoad, started: UInt64) {
        self.load = load
        self.started = started
    }

    func download(_ task: any ImageDownloadTask, didReceive response: DownloadResponse) {
        progress.withLock { $0.status = response.statusCode }
    }

    func download(_ task: any ImageDownloadTask, didReceive chunk: Data) {
        progress.withLock { $0.bytes += chunk.count }
    }

    func download(_ task: any ImageDownloadTask, didCompleteWith error: DownloadError?) {
        let (status, bytes) = progress.withLock { $0 }
        load.completed(startedAt: started, status: status, bytes: bytes, error: error)
    }
}

// MARK: - What the server saw

/// Counts the server's completed requests and the connections they came on, and checks each one sent the whole
/// body: the same check for wrk as for our downloaders.
final class ServerTally: Sendable {
    struct Snapshot {
        var requests = 0
        var bad = 0
        /// 200 responses the client closed the connection on before the body ended.
        var cutShort = 0
        var firstBad: String?
        var highestConnection = 0

        func since(_ earlier: Snapshot) -> Delta {
            Delta(requests: requests - earlier.requests, bad: bad - earlier.bad, cutShort: cutShort - earlier.cutShort, firstBad: firstBad,
                  connections: highestConnection - earlier.highestConnection)
        }
    }

    struct Delta {
        var requests: Int
        var bad: Int
        var cutShort: Int
        var firstBad: String?
        /// Connections accepted during the phase (the server numbers them in accept order).
        var connections: Int

        /// Throws unless every response was a complete 200, but for at most `allowed` cut short by the client.
        func check(phase: String, allowingCutShort allowed: Int = 0) throws {
            if bad > 0 || cutShort > allowed {
                throw FetchBenchError.serverMismatch(phase: phase, "\(bad) of \(requests) responses wrong, \(cutShort) cut short "
                                                     + "by the client (first wrong: \(firstBad ?? "none"))")
            }
        }
    }

    private let expectedBytes: Int
    private let state = Locked(Snapshot())

    init(expectedBytes: Int) {
        self.expectedBytes = expectedBytes
    }

    // Runs on an event-loop thread of the server: kept to a few integer updates.
    func record(_ record: OriginRequestRecord) {
        state.withLock { state in
            state.requests += 1
            state.highestConnection = max(state.highestConnection, record.connection)
            if record.status == 200 && record.clientWentAway && record.bytesSent < expectedBytes {
                state.cutShort += 1
            } else if record.status != 200 || record.bytesSent != expectedBytes || record.clientWentAway {
                state.bad += 1
                if state.firstBad == nil {
                    state.firstBad = "status \(record.status), \(record.bytesSent) bytes sent, client went away: \(record.clientWentAway)"
                }
            }
        }
    }

    func snapshot() -> Snapshot {
        state.withLock { $0 }
    }
}
