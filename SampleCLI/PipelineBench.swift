import ArgumentParser
import CoreMetrics
import Dispatch
import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import NIOPosix
import PipelineLocking

/// `sample-cli bench pipeline`: cold-pipeline throughput. A cold pipeline fetching many distinct JPEGs from
/// the loopback origin into 256 px images (memory and disk caches written), against the same decodes done
/// directly on as many threads in the same run.
struct PipelineBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pipeline",
        abstract: "B12: --images distinct 1920x1080 JPEGs from the loopback origin to 256 px through a cold pipeline (images/s).",
        discussion: """
            Four 1920x1080 JPEGs are made from bundled photos (quality 85) and served under --images distinct \
            URLs, so every fetch is a new identifier: a download, a decode at 256 px (DCT scaling, then \
            resampling), the rendered and memory caches, and a disk-cache write. All fetches are started at \
            once; the pipeline's own queues bound the work. Reported: images/s until the last completion. \
            The anchor, measured in the same run right after: the same decodes at 256 px straight from memory \
            on as many threads (no network, no caches), as images/s; the ratio is ours over the anchor. \
            Right before and right after the pipeline, the same run measures a hand-written fetch on as many \
            threads, the least a fetch with a disk copy costs on this machine: per image a blocking GET on a \
            kept-alive connection to the same origin, the body written to a new file, and the anchor's decode (no \
            index, no caches, no sharing); the two runs are taken together (both rates are printed: creating \
            files on ext4 without a journal costs more while recently freed inodes lie near, so runs close \
            together differ; the files go to the temporary directory, TMPDIR), and the last line also gives the \
            pipeline's rate over it. \
            --threads sets the pipeline's decode slots (GlobalConfiguration.maxConcurrentImageDecodeCount) and \
            the anchor's threads, and --downloads (default: 4, or --threads when larger) the downloads at once; \
            --threads does not keep the process on that many cores: \
            scripts/bench-pipeline-scaling.sh runs it under taskset for 1, 2, ... cores. \
            --breakdown turns the pipeline's stage CPU times on and prints CPU time per image by stage, and how \
            long each number of decodes ran at once (fewer than one per core leaves cores without a decode). \
            The fetches run on libdispatch's utility pool, a thread per core, as they do by default; \
            --thread-per-fetch gives each fetch's queue a thread of its own instead (see \
            GlobalConfiguration.fetchQueueTarget). \
            --transport blocking downloads through the hand-written fetch's blocking connections instead of \
            AsyncHTTPClient, to tell the HTTP client's cost from the pipeline's own. \
            Targets: at least 250 images/s on two cores, and 0.85x the anchor.
            """
    )

    @Option(help: "Distinct images to fetch.")
    var images = 1000

    @Option(help: "Decode slots of the pipeline and threads of the anchor (default: one per core).")
    var threads = GlobalConfiguration.defaultMaxConcurrentImageDecodeCount

    @Option(help: ArgumentHelp(
        "Downloads at once (GlobalConfiguration.maxConcurrentImagePipelineDownloadCount; default: TIP's 4, or --threads when larger).",
        valueName: "count"))
    var downloads: Int?

    @Option(help: ArgumentHelp(
        "Event-loop threads of the loopback origin (default: 1); more, to see whether one origin thread holds the fetches up on many cores.",
        valueName: "count"))
    var originThreads = 1

    @Option(help: ArgumentHelp(
        "Limit of the disk cache in MB (default: the configuration's); 0 stores nothing on disk, to see what the disk write costs.",
        valueName: "MB"))
    var diskCacheMb: Int?

    @Option(help: ArgumentHelp(
        "The scheduler time slice a decoding thread asks for, in microseconds (GlobalConfiguration.decodeTimeSlice; default: the kernel's).",
        valueName: "µs"))
    var decodeTimeSliceUs: Int?

    @Option(help: ArgumentHelp(
        "Processing slots the decodes take (GlobalConfiguration.processingSlots; default: none, a decode starts when its bytes are in).",
        valueName: "count"))
    var processingSlots: Int?

    @Flag(help: "Record stage CPU times; print where each image's CPU time went and how many decodes ran at once.")
    var breakdown = false

    @OptionGroup var fetchQueues: FetchQueueOption

    @Option(help: ArgumentHelp(
        "How the pipeline downloads: async-http-client (HTTPClientDownloader, the default) or blocking (the hand-written fetch's blocking connections, one thread per download).",
        valueName: "transport"))
    var transport = PipelineBenchTransport.asyncHTTPClient

    @OptionGroup var output: JSONOutput

    /// On loopback a download is over in a millisecond or two, so four at once (TIP's limit, made for a
    /// phone's radio) keep at most a few hundred fetches a second decoding: on many cores the download limit,
    /// not the decoding, would set the rate.
    private var downloadSlots: Int { downloads ?? max(4, threads) }

    func run() async throws {
        guard threads > 0 else { throw ValidationError("--threads: a positive number") }
        guard downloadSlots > 0 else { throw ValidationError("--downloads: a positive number") }
        guard (decodeTimeSliceUs ?? 1) > 0 else { throw ValidationError("--decode-time-slice-us: a positive number") }
        guard (processingSlots ?? 1) > 0 else { throw ValidationError("--processing-slots: a positive number") }
        guard originThreads > 0 else { throw ValidationError("--origin-threads: a positive number") }
        let sources = ["skimage-hubble_deep_field.jpg", "skimage-rocket.jpg", "skimage-astronaut-progressive.jpg", "skimage-chelsea.png"]
        let photos = try sources.map { try BenchImages.photoJPEG(width: 1920, height: 1080, from: $0) }
        // The origin serves from event loops of its own, so that its CPU time can be told from the client's.
        let originLoops = MultiThreadedEventLoopGroup(numberOfThreads: originThreads)
        let server = try await ImageOriginServer.start(port: 0, eventLoopGroup: originLoops)
        server.setRequestLogCapacity(16)
        for index in 0..<images {
            server.setAsset(photos[index % photos.count], at: "/pipeline/\(index).jpg", contentType: "image/jpeg")
        }
        let target = TargetSizing(dimensions: PixelSize(width: 256, height: 256), contentMode: .fit)
        // The hand-written fetch runs right before and right after the pipeline, and the files of all three stay
        // until the end: where creating a file costs more for a while after deletions (see BenchFileSystem), a
        // run's own deletions, or a run that follows another closely, would make one side pay more than the
        // other. The floor is the two together; both rates are printed.
        if let warning = BenchFileSystem.journalWarning(for: FileManager.default.temporaryDirectory) { output.say(warning) }
        let floorRoot = FileManager.default.temporaryDirectory.appendingPathComponent("sample-cli-floor-\(getpid())")
        defer { try? FileManager.default.removeItem(at: floorRoot) }
        let paths = (0..<images).map { "/pipeline/\($0).jpg" }
        let handWritten = { (name: String) throws -> HandWrittenRun in
            try HandWrittenRun.measure(port: server.port, paths: paths, directory: floorRoot.appendingPathComponent(name),
                                       target: target, threads: threads)
        }
        let floorBefore = try handWritten("before")
        // A pause with the origin idle between the fetches lets a scheduler trace tell them apart
        // (scripts/idle-cores.py).
        try await Task.sleep(for: .milliseconds(200))
        // The client keeps 8 HTTP/1.1 connections per host unless told otherwise: with more download slots, the
        // downloads beyond 8 would wait for a connection to the one origin instead of running at once.
        var client = HTTPClientDownloader.defaultConfiguration()
        client.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(8, downloadSlots)
        let httpClient = transport == .asyncHTTPClient ? HTTPClientDownloader(configuration: client) : nil
        let downloader: any ImageDownloader = httpClient ?? BlockingLoopbackDownloader()
        let (rate, cpu, floorAfter) = try await pipelineRate(server: server, downloader: downloader, target: target) {
            try handWritten("after")
        }
        let floor = HandWrittenRun.Together(runs: [floorBefore, floorAfter])
        try await httpClient?.shutdown()
        try await server.shutdown()
        try await originLoops.shutdownGracefully()
        let anchorBefore = ProcessCPUSnapshot.now()
        let anchor = try Self.directDecodeRate(photos: photos, count: images, target: target, threads: threads)
        let anchorAfter = ProcessCPUSnapshot.now()
        let anchorCPU = (anchorAfter.process - anchorBefore.process) / Double(images) * 1e6
        let pipelineCPU = (cpu.after.process - cpu.before.process) / Double(images) * 1e6
        let originCPU = (cpu.after.originLoops - cpu.before.originLoops) / Double(images) * 1e6
        let floorCPU = floor.processCPUPerImage(images: images)
        let floorOriginCPU = floor.originCPUPerImage(images: images)
        let plural = threads == 1 ? "" : "s"
        output.say(String(format: "anchor:   the same decodes at 256 px from memory on %d thread%@ = %.0f images/s", threads, plural, anchor))
        output.say(String(format: "floor:    a hand-written fetch on %d thread%@ (blocking GET, the body written to a new file, the same decode) = %.0f images/s (%.0f before the pipeline, %.0f after), %.2fx the bare decodes; CPU per image %.0f us (less the origin's %.0f us)",
                     threads, plural, floor.rate, floorBefore.rate, floorAfter.rate, floor.rate / anchor,
                     floorCPU - floorOriginCPU, floorOriginCPU))
        output.say(String(format: "CPU per image: the pipeline %.0f us (its process, less the loopback origin's %.0f us), the bare decodes %.0f us: %.2fx",
                     pipelineCPU - originCPU, originCPU, anchorCPU, anchorCPU / max(pipelineCPU - originCPU, 1)))
        let pipelineSwitches = cpu.after.switchesPerImage(since: cpu.before, images: images)
        let floorSwitches = floor.switchesPerImage(images: images)
        let anchorSwitches = anchorAfter.switchesPerImage(since: anchorBefore, images: images)
        output.say(String(format: "context switches per image (wake-ups, then preemptions; the origin's threads left out): the pipeline %.1f + %.1f, the hand-written fetch %.1f + %.1f, the bare decodes %.1f + %.1f",
                          pipelineSwitches.voluntary, pipelineSwitches.involuntary, floorSwitches.voluntary,
                          floorSwitches.involuntary, anchorSwitches.voluntary, anchorSwitches.involuntary))
        if let fetchStart = cpu.before.cores, let fetchEnd = cpu.after.cores, let decodeStart = anchorBefore.cores,
           let decodeEnd = anchorAfter.cores, let floorShares = floor.coreShares {
            printCoreShares(fetching: fetchEnd.shares(since: fetchStart), handWritten: floorShares,
                            decoding: decodeEnd.shares(since: decodeStart))
        }
        output.say(String(format: "B12 pipeline: %.0f images/s, %.2fx the direct decodes on %d thread%@ (targets: >= 250 images/s on two cores, >= 0.85x); %.2fx the hand-written fetch",
                     rate, rate / anchor, threads, plural, rate / floor.rate))
        try output.write(object: [
            "benchmark": "pipeline", "images": images, "threads": threads, "imagesPerSecond": rate,
            "anchorImagesPerSecond": anchor, "floorImagesPerSecond": floor.rate,
            "floorRunsImagesPerSecond": [floorBefore.rate, floorAfter.rate], "ratioToAnchor": rate / anchor,
            "ratioToFloor": rate / floor.rate,
            "cpuPerImageMicroseconds": ["pipeline": pipelineCPU - originCPU, "origin": originCPU, "anchor": anchorCPU,
                                        "floor": floorCPU - floorOriginCPU],
            "voluntarySwitchesPerImage": ["pipeline": pipelineSwitches.voluntary, "floor": floorSwitches.voluntary,
                                          "anchor": anchorSwitches.voluntary],
            "involuntarySwitchesPerImage": ["pipeline": pipelineSwitches.involuntary, "floor": floorSwitches.involuntary,
                                            "anchor": anchorSwitches.involuntary],
        ])
    }

    /// How busy the cores were while the pipeline fetched, while the hand-written fetch ran and while decoding
    /// bare: idle cores while fetching mean that something other than CPU held the fetches up, and the
    /// hand-written fetch tells what any fetch over loopback leaves idle on the machine.
    private func printCoreShares(fetching: CoreTimes.Shares, handWritten: CoreTimes.Shares, decoding: CoreTimes.Shares) {
        var line = String(format: "cores: the %d this process may run on were %.0f%% busy, %.0f%% idle while fetching; ",
                          CoreTimes.allowedCores.count, fetching.busy * 100, fetching.idle * 100)
        line += String(format: "%.0f%% busy, %.0f%% idle during the hand-written fetch; ", handWritten.busy * 100, handWritten.idle * 100)
        line += String(format: "%.0f%% busy, %.0f%% idle during the bare decodes", decoding.busy * 100, decoding.idle * 100)
        if fetching.steal + handWritten.steal + decoding.steal > 0.005 {
            line += String(format: " (taken by the hypervisor: %.0f%%, %.0f%% and %.0f%%)", fetching.steal * 100,
                           handWritten.steal * 100, decoding.steal * 100)
        }
        output.say(line)
    }

    /// Images/s of a cold pipeline with `threads` decode slots fetching every image once, the process's CPU
    /// time before and after the fetches, and what `afterwards` returns: it runs once they are over, with the
    /// pipeline's files still on disk.
    private func pipelineRate<Afterwards: Sendable>(server: ImageOriginServer, downloader: any ImageDownloader, target: TargetSizing,
                                          afterwards: () throws -> Afterwards)
        async throws -> (Double, (before: ProcessCPUSnapshot, after: ProcessCPUSnapshot), Afterwards) {
        let stages = StageTimeCollector()
        let (seconds, failures, diskBytes, cpu, later) = try await BenchPipeline.withPipeline(
            named: "bench-pipeline", downloader: downloader, metrics: breakdown ? stages : nil,
            configure: {
                $0.maxConcurrentImageDecodeCount = threads
                $0.maxConcurrentImagePipelineDownloadCount = downloadSlots
                if let diskCacheMb { $0.maxBytesForAllDiskCaches = diskCacheMb << 20 }
                $0.decodeTimeSlice = decodeTimeSliceUs.map { .microseconds($0) }
                $0.processingSlots = processingSlots.map { ProcessingSlots(count: $0) }
                $0.recordsStageCPUTime = breakdown
                fetchQueues.apply(to: $0)
            }
        ) { pipeline, queue in
            let before = ProcessCPUSnapshot.now()
            let started = DispatchTime.now().uptimeNanoseconds
            let requests = (0..<images).map { GenericFetchRequest(url: server.url(for: "/pipeline/\($0).jpg"), targetSizing: target) }
            let completions = await BenchPipeline.fetchAtOnce(requests, pipeline: pipeline, queue: queue)
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            let after = ProcessCPUSnapshot.now()
            let diskBytes = pipeline.diskCache?.totalBytes ?? 0
            try await Task.sleep(for: .milliseconds(200))
            return (seconds, completions.filter { !$0.succeeded }.count, diskBytes, (before, after), try afterwards())
        }
        guard failures == 0 else { throw CommandFailure("\(failures) of \(images) fetches failed") }
        let rate = Double(images) / seconds
        output.say(String(format: "pipeline: %d images in %.2f s = %.0f images/s with %d decode slot%@ and %d downloads (disk cache: %.1f MB written)",
                     images, seconds, rate, threads, threads == 1 ? "" : "s", downloadSlots, Double(diskBytes) / 1e6))
        if breakdown {
            printStageBreakdown(images: images, stages: stages.totals, before: cpu.0, after: cpu.1, output: output)
            printDecodesAtOnce(stages.decodesAtOnceTotals, output: output)
        }
        return (rate, (cpu.0, cpu.1), later)
    }

    /// Images/s of decoding `count` of `photos` (in turn) at `target` on `threads` threads.
    private static func directDecodeRate(photos: [Data], count: Int, target: TargetSizing, threads: Int) throws -> Double {
        try Timing.itemsPerSecond(count: count, threads: threads) {
            { index in _ = try CodecCatalogue.shared.decode(photos[index % photos.count], target: target) }
        }
    }
}

/// How `bench pipeline` downloads.
enum PipelineBenchTransport: String, ExpressibleByArgument {
    /// `HTTPClientDownloader`, as an application would.
    case asyncHTTPClient = "async-http-client"
    /// ``BlockingLoopbackDownloader``: the hand-written fetch's HTTP, to take the HTTP client's cost out.
    case blocking
}

/// What the pipeline benchmarks share: a cold pipeline in a temporary cache directory.
enum BenchPipeline {
    /// Runs `body` with a new pipeline (its own configuration, delegate queue and temporary cache directory,
    /// removed afterwards) that downloads with `downloader` and reports metrics to `metrics`.
    static func withPipeline<R: Sendable>(
        named name: String, downloader: any ImageDownloader, metrics: (any MetricsFactory)?,
        configure: (GlobalConfiguration) -> Void = { _ in },
        _ body: (ImagePipeline, DispatchQueue) async throws -> R
    ) async throws -> R {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sample-cli-\(name)-\(getpid())-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let configuration = GlobalConfiguration()
        let queue = DispatchQueue(label: "sample-cli.bench.delegate")
        configuration.delegateQueue = queue
        configuration.imageDownloader = downloader
        if let metrics { configuration.metricsFactory = metrics }
        configure(configuration)
        let pipeline: ImagePipeline
        do {
            pipeline = try ImagePipeline(identifier: name, configuration: configuration, cacheRoot: root)
        } catch {
            throw CommandFailure("\(error)")
        }
        return try await body(pipeline, queue)
    }

    /// One fetch's completion: whether it succeeded, and when its callback ran (uptime nanoseconds).
    struct Completion: Sendable {
        var succeeded: Bool
        var at: UInt64
    }

    /// Starts a fetch per request, all in one turn of the delegate queue (the pipeline's own queues bound the
    /// work), and returns once every completion callback has run, in the order they ran.
    static func fetchAtOnce(_ requests: [GenericFetchRequest], pipeline: ImagePipeline,
                            queue: DispatchQueue) async -> [Completion] {
        guard !requests.isEmpty else { return [] }
        let completions = Locked<[Completion]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                for request in requests {
                    let operation = pipeline.operation(with: request) { result in
                        let completion = Completion(succeeded: (try? result.get()) != nil, at: DispatchTime.now().uptimeNanoseconds)
                        let done = completions.withLock { all -> Bool in
                            all.append(completion)
                            return all.count == requests.count
                        }
                        if done { continuation.resume() }
                    }
                    pipeline.fetchImage(with: operation)
                }
            }
        }
        return completions.withLock { $0 }
    }
}

/// Test photos for the pipeline benchmarks, made from the bundled images.
enum BenchImages {
    /// The bundled image `name` resampled to `width` x `height` and encoded as a baseline JPEG at quality 85.
    static func photoJPEG(width: Int, height: Int, from name: String) throws -> Data {
        guard let path = FetchBench.bundledImagePath(name) else { throw CommandFailure("bundled image \(name) not found") }
        let decoded = try CodecCatalogue.shared.decode(try Data(contentsOf: URL(fileURLWithPath: path)))
        let resized = try decoded.container.bitmap.scaled(to: PixelSize(width: width, height: height))
        return try CodecCatalogue.shared.encode(ImageContainer(bitmap: resized), as: .jpeg, quality: 0.85)
    }
}

/// Counts decodes through the pipeline's decode-duration timer; every other metric is dropped.
final class DecodeCounter: MetricsFactory, Sendable {
    private let decodes = Locked(0)

    var count: Int { decodes.withLock { $0 } }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { IgnoredMetric() }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler { IgnoredMetric() }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        label == PipelineMetricLabels.decodeDuration ? DecodeTimer(counter: self) : IgnoredMetric()
    }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}

    private final class DecodeTimer: TimerHandler, Sendable {
        let counter: DecodeCounter
        init(counter: DecodeCounter) { self.counter = counter }
        func recordNanoseconds(_ duration: Int64) { counter.decodes.withLock { $0 += 1 } }
    }
}

/// A metric handler that drops what it is given: the benchmarks' factories return it for what they do not count.
final class IgnoredMetric: CounterHandler, RecorderHandler, TimerHandler, Sendable {
    func increment(by: Int64) {}
    func reset() {}
    func record(_ value: Int64) {}
    func record(_ value: Double) {}
    func recordNanoseconds(_ duration: Int64) {}
}
