import ArgumentParser
import Dispatch
import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import NIOPosix

/// `sample-cli bench coalesce`: request coalescing. Many fetches of one URL at once through a cold
/// pipeline must make one request and one decode, and every completion must follow the first closely.
struct CoalesceBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coalesce",
        abstract: "B13: --fetches concurrent fetches of one URL through a cold pipeline: requests, decodes, callback spread.",
        discussion: """
            Each round makes a new pipeline (empty caches) and a new URL on the in-process loopback origin, \
            serving a 1920x1080 JPEG made from a bundled photo, then starts --fetches fetches of it at 256 px, \
            all from the delegate queue in one turn. Counted per round: requests the origin served, decodes \
            (the pipeline's decode-duration metric), fetches that failed, and the spread: time from the first \
            completion callback to the last, and the context switches of the pipeline's threads per fetch (wake-ups, \
            then preemptions; the origin's own threads left out), which show whether the fetches that share the \
            download each wake a thread for its end. Targets (B13): exactly 1 request and 1 decode; every \
            callback within 1 ms of the first. Exits 1 when a round misses the counts (not the spread or the \
            switches, which are timing). --thread-per-fetch runs each fetch's queue on a thread of its own, where \
            the fetches that joined the download take its events together in one hand-off.
            """
    )

    @Option(help: "Concurrent fetches of the one URL.")
    var fetches = 100

    @Option(help: "Rounds, each with a new pipeline and URL.")
    var rounds = 5

    @OptionGroup var fetchQueues: FetchQueueOption

    @OptionGroup var output: JSONOutput

    func run() async throws {
        let jpeg = try BenchImages.photoJPEG(width: 1920, height: 1080, from: "skimage-hubble_deep_field.jpg")
        // The origin serves from an event loop of its own, so that its context switches can be told apart.
        let originLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await ImageOriginServer.start(port: 0, eventLoopGroup: originLoops)
        let downloader = HTTPClientDownloader()
        var spreads: [Double] = []
        var switchesPerFetch: [Double] = []
        var countsMissed = false
        var roundReports: [[String: Any]] = []
        output.say("round  requests  decodes  failed  spread_ms  switches/fetch   (target: 1 request, 1 decode, spread <= 1 ms)")
        for round in 0..<rounds {
            let path = "/coalesce/\(round)/photo.jpg"
            server.setAsset(jpeg, at: path, contentType: "image/jpeg")
            let requestsBefore = server.requestLog.count
            let decodes = DecodeCounter()
            let outcome = try await BenchPipeline.withPipeline(named: "bench-coalesce-\(round)", downloader: downloader,
                                                               metrics: decodes,
                                                               configure: fetchQueues.apply(to:)) { pipeline, queue in
                let before = ProcessCPUSnapshot.now()
                var outcome = await Self.fetchAll(count: fetches, url: server.url(for: path), pipeline: pipeline, queue: queue)
                outcome.switches = ProcessCPUSnapshot.now().switchesPerImage(since: before, images: fetches)
                return outcome
            }
            let requests = server.requestLog.count - requestsBefore
            let spread = outcome.spreadMilliseconds
            spreads.append(spread)
            switchesPerFetch.append(outcome.switches.voluntary + outcome.switches.involuntary)
            if requests != 1 || decodes.count != 1 || outcome.failed > 0 { countsMissed = true }
            output.say(String(format: "%5d  %8d  %7d  %6d  %9.3f  %5.2f + %4.2f", round, requests, decodes.count, outcome.failed,
                              spread, outcome.switches.voluntary, outcome.switches.involuntary))
            roundReports.append(["round": round, "requests": requests, "decodes": decodes.count, "failed": outcome.failed,
                                 "spreadMs": spread, "wakeUpsPerFetch": outcome.switches.voluntary,
                                 "preemptionsPerFetch": outcome.switches.involuntary])
        }
        try await downloader.shutdown()
        try await server.shutdown()
        try await originLoops.shutdownGracefully()
        spreads.sort()
        switchesPerFetch.sort()
        output.say(String(format: "B13 coalesce: %d fetches of one URL: spread p50 %.3f ms, max %.3f ms (target <= 1 ms); context switches per fetch %.2f-%.2f; counts %@",
                          fetches, spreads[spreads.count / 2], spreads.last ?? 0, switchesPerFetch.first ?? 0,
                          switchesPerFetch.last ?? 0, countsMissed ? "MISSED" : "met in every round"))
        try output.write(object: ["benchmark": "coalesce", "fetches": fetches, "rounds": roundReports,
                                  "spreadP50Ms": spreads[spreads.count / 2], "spreadMaxMs": spreads.last ?? 0,
                                  "switchesPerFetchMin": switchesPerFetch.first ?? 0, "switchesPerFetchMax": switchesPerFetch.last ?? 0,
                                  "countsMet": !countsMissed])
        if countsMissed { throw ExitCode(1) }
    }

    private struct Outcome {
        var failed = 0
        /// Context switches per fetch (wake-ups, preemptions) of the round's fetches, the origin's left out.
        var switches = (voluntary: 0.0, involuntary: 0.0)
        var completions: [UInt64] = []
        var spreadMilliseconds: Double {
            guard let first = completions.min(), let last = completions.max() else { return 0 }
            return Double(last - first) / 1e6
        }
    }

    /// Fetches `url` `count` times at once and notes when each completion callback ran.
    private static func fetchAll(count: Int, url: URL, pipeline: ImagePipeline, queue: DispatchQueue) async -> Outcome {
        let request = GenericFetchRequest(url: url, targetSizing: TargetSizing(dimensions: PixelSize(width: 256, height: 256),
                                                                               contentMode: .fit))
        let completions = await BenchPipeline.fetchAtOnce(Array(repeating: request, count: count), pipeline: pipeline, queue: queue)
        return Outcome(failed: completions.filter { !$0.succeeded }.count, completions: completions.map(\.at))
    }
}
