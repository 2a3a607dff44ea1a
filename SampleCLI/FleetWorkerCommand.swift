import ArgumentParser
import Crypto
import Dispatch
import Foundation
import ImagePipelineHTTPClient
import ImagePipelineKit
import ImagePipelineRedis
import PipelineLocking

/// `sample-cli fleet-worker` (hidden): one process of `sample-cli fleet`. Fetches its URLs concurrently through a
/// pipeline with its own cache directory and, with `--redis`, the fleet-shared tier; prints one JSON line per URL
/// (`url, source, sha256, leaseWaitMs, error`) and a last line `{summary: {...}}`.
struct FleetWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet-worker",
        abstract: "One worker process of `sample-cli fleet` (not for direct use).",
        shouldDisplay: false
    )

    @Argument(help: "The URLs to fetch, in this order.")
    var urls: [String]

    @Option(help: "This worker's cache directory.")
    var cacheDir: String

    @Option(help: "The Redis URL of the shared tier; without it, the worker runs without the tier.")
    var redis: String?

    @Option(help: ArgumentHelp("Decode and scale to this size.", valueName: "WxH"))
    var target: TargetOption?

    @Option(help: "The namespace of the tier's keys (one per fleet run keeps runs apart on a shared Redis).")
    var namespace = "fleet"

    @Option(help: "The fill lease's time to live in milliseconds.")
    var leaseTtlMs = 5000

    @Option(help: "The fleet's signing secret (HMAC-SHA256 of every value).")
    var secret: String?

    @Flag(help: "Print {downloading: URL} when a fetch goes to the origin (the fleet kills a lease holder then).")
    var announceDownloads = false

    func run() async throws {
        let started = ContinuousClock.now
        let configuration = GlobalConfiguration()
        configuration.delegateQueue = DispatchQueue(label: "sample-cli.fleet-worker.delegate")
        configuration.imageDownloader = HTTPClientDownloader()
        configuration.problemObserver = ProblemWarnings()
        let pipeline: ImagePipeline
        do {
            pipeline = try ImagePipeline(identifier: "fleet", configuration: configuration,
                                         cacheRoot: URL(fileURLWithPath: cacheDir))
        } catch {
            throw CommandFailure("\(error)")
        }
        if let redis {
            let client = RedisClient(configuration: try RedisConfiguration(url: redis))
            let cache = RedisImageCache(client: client, signingSecret: secret.map { Data($0.utf8) })
            pipeline.sharedCache = SharedCacheConfiguration(cache: cache, namespace: namespace,
                                                            leaseTimeToLive: .milliseconds(leaseTtlMs))
        }
        let target = TargetSizing(dimensions: target?.size, contentMode: .fit)
        let announce = announceDownloads
        let lines = await withTaskGroup(of: [String: any Sendable].self) { group in
            for url in urls {
                group.addTask { await Self.fetch(url, target: target, through: pipeline, announce: announce) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        // The disk writes that follow delivery are done once every operation reported finished.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                configuration.operationQueue.waitUntilAllOperationsAreFinished()
                continuation.resume()
            }
        }
        var output = ""
        for var line in lines {
            if let url = line["url"] as? String, line["error"] is NSNull {
                let stored = try? pipeline.withCopyOfDiskCacheFile(identifier: url) { try Data(contentsOf: $0) }
                line["sha256"] = stored.map { SHA256.hash(data: $0).map { String(format: "%02x", $0) }.joined() } ?? NSNull()
            }
            output += Self.json(line) + "\n"
        }
        let sources = lines.compactMap { $0["source"] as? String }
        let summary: [String: any Sendable] = [
            "fetches": lines.count,
            "failures": lines.filter { !($0["error"] is NSNull) }.count,
            "tierHits": sources.filter { $0 == "shared" }.count,
            "originFetches": sources.filter { $0 == "network" || $0 == "networkResumed" }.count,
            "leaseWaits": lines.filter { $0["leaseWaitMs"] is Double }.count,
            "wallMs": (ContinuousClock.now - started).milliseconds,
        ]
        output += Self.json(["summary": summary]) + "\n"
        FileHandle.standardOutput.write(Data(output.utf8))
    }

    private static func fetch(_ url: String, target: TargetSizing, through pipeline: ImagePipeline, announce: Bool) async
        -> [String: any Sendable] {
        guard let parsed = URL(string: url) else { return ["url": url, "source": NSNull(), "error": "not a URL"] }
        let request = GenericFetchRequest(url: parsed, targetSizing: target)
        let delegate = WorkerFetchDelegate(url: url, announce: announce)
        let operation = pipeline.operation(with: request, delegate: delegate)
        let outcome = await delegate.outcome { pipeline.fetchImage(with: operation) }
        let wait = operation.metrics?.info(for: .sharedCache)?.sharedCacheLeaseWait
        switch outcome {
        case .success(let result):
            return ["url": url, "source": "\(result.source)", "leaseWaitMs": wait.map { $0 * 1000 } ?? NSNull(),
                    "error": NSNull()]
        case .failure(let error):
            return ["url": url, "source": NSNull(), "leaseWaitMs": NSNull(), "error": "\(error)"]
        }
    }

    static func json(_ object: [String: any Sendable]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}

/// Hears one fetch: announces its trip to the origin (written at once, unbuffered) and hands back its outcome.
private final class WorkerFetchDelegate: FetchDelegate {
    private let url: String
    private let announce: Bool
    private let continuation = Locked<CheckedContinuation<Result<FetchResult, FetchError>, Never>?>(nil)

    init(url: String, announce: Bool) {
        self.url = url
        self.announce = announce
    }

    /// Runs `start`, then waits for the fetch's end.
    func outcome(_ start: () -> Void) async -> Result<FetchResult, FetchError> {
        await withCheckedContinuation { continuation in
            self.continuation.withLock { $0 = continuation }
            start()
        }
    }

    func fetchOperation(_ operation: FetchOperation, willAttemptToLoadFrom source: ImageLoadSource) {
        guard announce, source == .network else { return }
        FileHandle.standardOutput.write(Data((FleetWorkerCommand.json(["downloading": url]) + "\n").utf8))
    }

    func fetchOperation(_ operation: FetchOperation, didLoadFinalImage result: FetchResult) {
        finish(.success(result))
    }

    func fetchOperation(_ operation: FetchOperation, didFailToLoadFinalImageWith error: FetchError) {
        finish(.failure(error))
    }

    private func finish(_ outcome: Result<FetchResult, FetchError>) {
        continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }?.resume(returning: outcome)
    }
}
