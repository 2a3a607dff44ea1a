import ArgumentParser
import Dispatch
import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit

/// `sample-cli scroll`: a headless grid of image views scrolled frame by frame, like a UI main loop.
struct ScrollCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scroll",
        abstract: "Simulate a scrolling grid of image views, frame by frame, and report what the pipeline did.",
        discussion: """
            An embedded loopback origin serves the --feed pictures (by default a photo feed of progressive \
            JPEGs with PNG, WebP and GIF cells) under a URL per cell, over the simulated link of --network \
            (one downlink shared by every response, with round trips). A grid of --columns cells per row, --rows rows \
            on screen, scrolls by --script at --fps for --seconds. Each visible cell is an ImageDisplaying view \
            driven by an ImageViewFetchHelper, fetching at the cell size through a pipeline with a disk cache; \
            cells that leave the screen cancel or lower their fetch (--disappearance). The frame loop runs on \
            the delegate queue, like a UI's main thread. Main-thread work per frame is the CPU time spent on \
            that queue since the last frame (the frame's own and every callback); the next --prefetch-screens \
            screens in the scroll's direction are prefetched at low priority; frame latency runs from the \
            vsync posting a frame to its end, waits included, and a frame over the budget is dropped. The run \
            checks that nothing decoded, scaled or touched the disk on that queue, and exits 1 if something did.
            """
    )

    @Option(help: "The scroll: fling (fast, decelerating), steady (constant speed), back-and-forth (revisits cells) or browse (a screen at a time with 2 s pauses, as a feed is read; three down, one back).")
    var script: ScrollScript = .backAndForth

    @Option(help: "The pictures: photos (a social feed: 1200-2048 px progressive JPEGs, made once from the bundled pictures and kept in out/feed, mixed with PNG, WebP and GIF cells) or small (the bundled pictures as they are, at most 1000 px).")
    var feed: FeedChoice = .photos

    @Option(name: .customLong("rows"), help: "Rows visible on screen (default: 6 for the photo feed, a phone's screen; 4 for small).")
    var rowsOption: Int?
    var rows: Int { rowsOption ?? (feed == .photos ? 6 : 4) }

    @Option(help: "Cells per row.")
    var columns = 3

    @Option(help: "Cells in the whole grid.")
    var items = 300

    @Option(name: .customLong("cell-size"),
            help: "Cell size in pixels, the target size of each fetch (default: 390 for the photo feed, a third of a 390-point phone screen at 3x; 128 for small).")
    var cellSizeOption: Int?
    var cellSize: Int { cellSizeOption ?? (feed == .photos ? 390 : 128) }

    @Option(help: "Screens ahead of the scroll to prefetch at low priority with an ImagePrefetcher (pipeline runs only); 0 turns prefetching off.")
    var prefetchScreens = 1

    @Option(help: ArgumentHelp("Downloads the pipeline runs at once, and connections to the origin (default over a simulated link: one per cell on screen, --rows × --columns, so that every visible cell gets its first scan in the first round trips; the library's 4 on loopback).", valueName: "N"))
    var maxDownloads: Int?

    @Option(help: ArgumentHelp("Fetch operations the pipeline runs at once, the operation queue's width (default over a simulated link: --max-downloads + 4; the library's on loopback). A fetch holds its slot while it downloads, so on a slow link this, as much as --max-downloads, bounds how many visible cells load at once.", valueName: "N"))
    var maxFetches: Int?

    @OptionGroup var fetchQueues: FetchQueueOption

    @Flag(help: "Leave glibc's allocator as it is. By default the scroll asks it for two arenas and a fixed 128 KiB threshold for mapping large buffers on their own, as a memory-constrained app would (docs/scroll-simulation.md, \"Where the memory goes\").")
    var defaultAllocator = false

    @Option(help: "Frames per second: 60 or 120.")
    var fps = 60

    @Option(help: "Length of the run in seconds.")
    var seconds = 8.0

    @Option(help: "The simulated network between the app and the origin: loopback (none), wifi, lte, slow4g or 3g; see --link-model. The profiles are published browser throttling presets (docs/network-model.md).")
    var network: NetworkProfile = .wifi

    @Option(help: "How the profile applies: shared (one downlink shared by every response in flight, a round trip before each response and two more per new connection, as on a phone) or per-response (each response gets the profile's bandwidth on its own, with no connection cost).")
    var linkModel: LinkModel = .shared

    @Option(help: "What a cell does with its fetch when it scrolls off: none, cancel, lower, unload.")
    var disappearance: DisappearanceChoice = .unload

    @Flag(inversion: .prefixedNo, help: "Cells that show a progressive scan let cells that show nothing yet have the link: their fetch goes on at very low priority, and its download is suspended while another cell's runs and continues where it stopped (pipeline runs only).")
    var firstPixelsFirst = true

    @Option(help: "The downloader: urlsession or httpclient.")
    var downloader: DownloaderChoice = .httpclient

    @Option(help: ArgumentHelp("The directory for the pipeline's caches (default: a temporary one, removed after).",
                               valueName: "DIR"))
    var cacheDir: String?

    @OptionGroup var output: JSONOutput

    @Option(help: ArgumentHelp("Write the viewport at the end as a PNG, made from the pixels the cells hold.",
                               valueName: "FILE.png"))
    var snapshot: String?

    @Option(help: ArgumentHelp("Write a plot of frame latency (vsync to frame done) and images completed over time: PNG or SVG, by the file's extension.",
                               valueName: "FILE.png|FILE.svg"))
    var timeline: String?

    @Option(help: "Caches at the start of the measured run: cold (empty), disk (an unmeasured run first, then a new pipeline on the same disk cache) or memory (an unmeasured run first, then the same pipeline again).")
    var warm: WarmCaches = .cold

    @Option(help: ArgumentHelp("The byte limit of all rendered caches (decoded, scaled images), in MiB, as an app would size it for its screens; default: the library's (half of min(RAM / 12, 160 MB)).",
                               valueName: "MiB"))
    var renderedCacheMb: Int?

    @Option(name: .customLong("rendition-table-slots"),
            help: ArgumentHelp("Slots of the pipeline's rendition table at the cell size: decoded cells kept on disk, memory-mapped, so a cell shown before needs no decode, in this run or the next (each slot takes cell-size² × 4 bytes once written); 0 turns it off. Default: 512, fewer for cells so large that 512 would pass 64 MiB.",
                               valueName: "SLOTS"))
    var renditionTableSlotsOption: Int?
    var renditionTableSlots: Int { renditionTableSlotsOption ?? min(512, max(16, (64 << 20) / (cellSize * cellSize * 4))) }

    @Flag(help: "No live progress line.")
    var quiet = false

    func validate() throws {
        guard fps == 60 || fps == 120 else { throw ValidationError("--fps must be 60 or 120") }
        guard rows > 0, columns > 0, items >= rows * columns else { throw ValidationError("--items must fill the screen") }
        guard cellSize >= 8, cellSize <= 2048 else { throw ValidationError("--cell-size must be between 8 and 2048") }
        guard seconds > 0, seconds <= 600 else { throw ValidationError("--seconds must be in (0, 600]") }
        guard (0...65_536).contains(renditionTableSlots) else {
            throw ValidationError("--rendition-table-slots must be between 0 and 65536")
        }
        if let renderedCacheMb, !(1...65_536).contains(renderedCacheMb) {
            throw ValidationError("--rendered-cache-mb must be between 1 and 65536")
        }
        if let timeline, !timeline.hasSuffix(".svg"), !timeline.hasSuffix(".png") {
            throw ValidationError("--timeline writes PNG or SVG: give a .png or .svg file")
        }
        if warm != .cold, compare { throw ValidationError("--warm and --compare do not go together") }
        if compareLoadersOnly, !compare { throw ValidationError("--compare-loaders-only goes with --compare") }
        guard (0...10).contains(prefetchScreens) else { throw ValidationError("--prefetch-screens must be between 0 and 10") }
        if let maxDownloads, !(1...64).contains(maxDownloads) { throw ValidationError("--max-downloads must be between 1 and 64") }
        if let maxFetches, !(1...64).contains(maxFetches) { throw ValidationError("--max-fetches must be between 1 and 64") }
    }

    @Option(help: ArgumentHelp("Load the cells' images from these URLs (a file, one per line, used in turn) instead of the embedded origin.",
                               valueName: "URL-LIST"))
    var origin: String?

    @Flag(help: "Compare: conventional loading (a download and a full decode on the main queue per cell on display, no caches, no previews, no progressive) against the pipeline; then baseline against progressive JPEGs of the same pictures (best over --network 3g).")
    var compare = false

    @Flag(help: "With --compare: conventional loading against the pipeline only, without the baseline-against-progressive runs (half the time).")
    var compareLoadersOnly = false

    func run() async throws {
        if !defaultAllocator { ProcessMemory.useCompactAllocator() }
        if let origin {
            return try await runAgainstExternalOrigin(listedIn: origin)
        }
        let bundled = try feed == .photos ? ScrollAssets.feed(cachedIn: "out/feed") : ScrollAssets.bundled()
        let server = try await ScrollOrigin.start(items: items, assets: bundled, network: network, model: linkModel)
        var reports: [(name: String, report: ScrollReport, outcome: ScrollSimulation.Outcome)] = []
        // The pipeline runs first, in a process that holds only the runtime and the origin: memory an earlier
        // run leaves with glibc would count in its peak. Both runs use the same origin and link.
        let pipelined = try await simulate(on: server, assets: bundled, conventional: false)
        if compare {
            let conventional = try await simulate(on: server, assets: bundled, conventional: true)
            reports.append(("conventional", conventional.0, conventional.1))
        }
        reports.append(("pipeline", pipelined.0, pipelined.1))
        try await server.shutdown()

        if compare {
            output.say(ScrollReport.sideBySide(reports.map { ($0.name, $0.report) }))
            // TIP's claim: progressive JPEGs become visible sooner on slow links. The same pictures both ways.
            for progressive in [false, true] where !compareLoadersOnly {
                let assets = try feed == .photos
                    ? ScrollAssets.feed(cachedIn: "out/feed", photosOnly: true, progressive: progressive)
                    : ScrollAssets.jpegs(progressive: progressive)
                let origin = try await ScrollOrigin.start(items: items, assets: assets, network: network, model: linkModel)
                let run = try await simulate(on: origin, assets: assets, conventional: false,
                                             identifier: progressive ? "scroll-progressive" : "scroll-baseline")
                try await origin.shutdown()
                reports.append((progressive ? "progressive JPEG" : "baseline JPEG", run.0, run.1))
            }
            if !compareLoadersOnly {
                output.say("")
                output.say(ScrollReport.sideBySide(reports.suffix(2).map { ($0.name, $0.report) }))
            }
        } else {
            output.say(pipelined.0.table())
        }
        if output.isRequested {
            let data = compare
                ? try ScrollReport.jsonData(Dictionary(uniqueKeysWithValues: reports.map { ($0.name, $0.report) }))
                : try pipelined.0.jsonData()
            try output.write(data)
            if let file = output.jsonFile { output.say("report written to \(file)") }
        }
        try writePictures(pipelined.0, pipelined.1)
        if pipelined.0.delegateQueueViolations > 0 {
            output.say("FAIL: \(pipelined.0.delegateQueueViolations) decode, scale or disk operations ran on the main (delegate) queue")
            throw ExitCode(1)
        }
    }

    /// `--origin`: one pipeline run over the listed URLs (no embedded origin, so no request log).
    private func runAgainstExternalOrigin(listedIn path: String) async throws {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch { throw CommandFailure("cannot read \(path): \(error)") }
        let listed = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        let parsed = listed.compactMap { URL(string: $0) }.filter { $0.scheme == "http" || $0.scheme == "https" }
        guard !parsed.isEmpty, parsed.count == listed.count else {
            throw CommandFailure("\(path) must list http(s) URLs, one per line")
        }
        let urls = (0..<items).map { parsed[$0 % parsed.count] }
        let formats = urls.map { ScrollAssets.format(of: $0.lastPathComponent) }
        let (report, outcome) = try await simulate(urls: urls, formats: formats, server: nil, conventional: false)
        output.say(report.table())
        if output.isRequested { try output.write(report.jsonData()) }
        try writePictures(report, outcome)
        if report.delegateQueueViolations > 0 { throw ExitCode(1) }
    }

    private func writePictures(_ report: ScrollReport, _ outcome: ScrollSimulation.Outcome) throws {
        if let snapshot {
            let png = try ScrollPictures.snapshot(width: columns * cellSize, height: rows * cellSize, cellSize: cellSize,
                                                  cells: outcome.viewport)
            try png.write(to: URL(fileURLWithPath: snapshot))
            output.say("viewport written to \(snapshot)")
        }
        if let timeline {
            let data = timeline.hasSuffix(".png")
                ? try ScrollPictures.timelinePNG(busyMs: outcome.busyMs, budgetMs: report.budgetMs,
                                                 imagesCompleted: outcome.imagesCompleted)
                : Data(ScrollPictures.timeline(busyMs: outcome.busyMs, budgetMs: report.budgetMs,
                                               imagesCompleted: outcome.imagesCompleted).utf8)
            try data.write(to: URL(fileURLWithPath: timeline))
            output.say("timeline written to \(timeline)")
        }
    }

    /// One run against `server`, through a pipeline with a disk cache of its own, or conventionally.
    /// Each run's pipeline has an identifier of its own: the fetches a run leaves cancelled may hold the previous
    /// pipeline a moment longer, and an identifier belongs to one live pipeline at a time.
    private func simulate(on server: ImageOriginServer, assets: ScrollAssets, conventional: Bool,
                          identifier: String = "scroll") async throws -> (ScrollReport, ScrollSimulation.Outcome) {
        try await simulate(urls: (0..<items).map { server.url(for: assets.path(item: $0)) },
                           formats: assets.formats(items: items), server: server, conventional: conventional,
                           identifier: identifier, originPictureBytes: assets.assets.reduce(0) { $0 + $1.data.count },
                           byteCounts: (0..<items).map { assets.assets[$0 % assets.assets.count].data.count })
    }

    private func simulate(urls: [URL], formats: [String], server: ImageOriginServer?, conventional: Bool,
                          identifier pipelineIdentifier: String = "scroll",
                          originPictureBytes: Int = 0, byteCounts: [Int]? = nil) async throws -> (ScrollReport, ScrollSimulation.Outcome) {
        let root = cacheDir.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("sample-cli-scroll-\(getpid())-\(UUID().uuidString)")
        defer { if cacheDir == nil { try? FileManager.default.removeItem(at: root) } }
        let configuration = GlobalConfiguration()
        // User-interactive, as a UI's main thread is: libdispatch on Linux runs it at a lower nice value than
        // the pipeline's utility work.
        let mainQueue = DispatchQueue(label: "sample-cli.scroll.main", qos: .userInteractive)
        DelegateQueueDiagnostics.measuresWork = true
        configuration.delegateQueue = mainQueue
        fetchQueues.apply(to: configuration)
        // Conventional loading goes through the platform's client, as an app without a pipeline does.
        let overLink = network != .loopback && server != nil
        let downloadSlots = maxDownloads ?? (overLink ? rows * columns : nil)
        let imageDownloader: any ImageDownloader = switch (conventional ? .urlsession : downloader) {
        case .urlsession: URLSessionDownloader()
        case .httpclient:
            // As many connections to the origin as downloads run at once, when that is more than the client's 8.
            HTTPClientDownloader(configuration: {
                var client = HTTPClientDownloader.defaultConfiguration()
                client.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(8, downloadSlots ?? 8)
                return client
            }())
        }
        configuration.imageDownloader = imageDownloader
        // Over a phone link a download spends most of its time waiting for round trips and its share of the
        // link: one per visible cell keeps the link busy and gives every cell its first scan in the first round
        // trips, instead of the last cells waiting for whole images ahead of them. Background work (prefetches)
        // yields to them in the coordinator, so more slots do not let it take the link.
        if let downloads = downloadSlots {
            configuration.maxConcurrentImagePipelineDownloadCount = downloads
        }
        if let fetches = maxFetches ?? downloadSlots.map({ $0 + 4 }) { configuration.operationQueue.maxConcurrentOperationCount = fetches }
        if let renderedCacheMb { configuration.maxBytesForAllRenderedCaches = renderedCacheMb << 20 }
        let identifier = conventional ? "scroll-conventional" : pipelineIdentifier
        let layout = GridLayout(rows: rows, columns: columns, items: items, cellSize: cellSize)
        var warmPipeline: ImagePipeline?
        if !conventional, warm != .cold {
            // The same scroll, unmeasured, fills the caches; then the measured run starts from them.
            weak var previous: ImagePipeline?
            do {
                let first = try makePipeline(identifier: identifier, configuration: configuration, cacheRoot: root,
                                              renditionTables: conventional ? 0 : renditionTableSlots)
                previous = first
                // Fetches are left running when their cells scroll off (at 8 screens/s most would be cancelled
                // before they finish, leaving the caches nearly empty), and the measured run waits for them.
                _ = await ScrollSimulation(pipeline: first, queue: mainQueue, urls: urls, formats: formats, layout: layout,
                                           script: script, fps: fps, seconds: seconds,
                                           disappearance: .none, quiet: true).run()
                let deadline = ContinuousClock.now + .seconds(60)
                while configuration.operationQueue.operationCount > 0, ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(20))
                }
                if warm == .memory { warmPipeline = first }
            }
            if warm == .disk {
                // A new pipeline on the same directory (empty rendered and memory caches, the disk cache as
                // left) once the first is gone: an identifier is held by one live pipeline at a time, and
                // fetches still winding down hold theirs.
                let deadline = ContinuousClock.now + .seconds(10)
                while previous != nil, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
            }
        }
        // The run's own peak, counted from here: the origin, its pictures and earlier runs are in the baseline.
        // What an earlier run of `--compare` freed goes back to the system first (glibc keeps freed memory in its
        // arenas), so that the baseline is what this process holds, not what the run before left lying around.
        ProcessMemory.returnFreedMemory()
        ProcessMemory.resetPeakResidentBytes()
        let residentBeforeRun = ProcessMemory.residentBytes()
        let pipeline = try warmPipeline ?? makePipeline(identifier: identifier, configuration: configuration, cacheRoot: root,
                                              renditionTables: conventional ? 0 : renditionTableSlots)
        let requestsBefore = server?.requestLog.count ?? 0
        let violationsBefore = DelegateQueueDiagnostics.violationCount(on: mainQueue)
        let simulation = ScrollSimulation(
            pipeline: pipeline, queue: mainQueue, urls: urls, formats: formats,
            layout: layout, script: script, fps: fps, seconds: seconds, disappearance: disappearance.behavior, quiet: quiet)
        simulation.byteCounts = byteCounts
        simulation.yieldsAfterFirstPixels = firstPixelsFirst
        simulation.linkBytesPerSecond = server == nil ? nil : network.link?.downlinkBytesPerSecond
        if conventional {
            simulation.conventionalDownloader = imageDownloader
        } else if prefetchScreens > 0 {
            simulation.prefetcher = ImagePrefetcher(pipeline: pipeline)
            simulation.prefetchScreens = prefetchScreens
        }
        let outcome = await simulation.run()
        // Downloads still winding down after the last frame (cancelled ones) are counted when the log has them.
        try? await Task.sleep(for: .milliseconds(200))
        var report = outcome.report
        report.network = network.rawValue
        report.script = script.rawValue
        report.warm = warm.rawValue
        report.delegateQueueViolations = DelegateQueueDiagnostics.violationCount(on: mainQueue) - violationsBefore
        if let server {
            let requests = server.requestLog.dropFirst(requestsBefore)
            report.requests = requests.count
            report.bytesTransferred = requests.reduce(0) { $0 + $1.bytesSent }
        } else {
            report.requests = -1   // an external origin: its log is not ours to read
        }
        report.cacheTotals = [
            "renderedBytes": configuration.totalBytesForAllRenderedCaches,
            "renderedLimitBytes": configuration.maxBytesForAllRenderedCaches,
            "memoryBytes": configuration.totalBytesForAllMemoryCaches,
            "diskBytes": configuration.totalBytesForAllDiskCaches,
        ]
        report.peakResidentBytes = ProcessMemory.peakResidentBytes()
        report.residentBeforeRunBytes = residentBeforeRun
        report.originPictureBytes = originPictureBytes
        report.peakDecodeBytes = configuration.peakBytesForDecodesInFlight
        report.sharedDownloads = configuration.downloadCoordinator.sharedLoadCount
        report.prefetchesCompleted = simulation.prefetcher?.completedCount ?? 0
        simulation.prefetcher?.stopPrefetching()
        try await (imageDownloader as? HTTPClientDownloader)?.shutdown()
        return (report, outcome)
    }
}

extension ScrollCommand {
    /// A pipeline for the run, with a rendition table of `renditionTables` slots at the cell size (none for 0).
    func makePipeline(identifier: String, configuration: GlobalConfiguration, cacheRoot: URL,
                      renditionTables slots: Int) throws -> ImagePipeline {
        do {
            let pipeline = try ImagePipeline(identifier: identifier, configuration: configuration, cacheRoot: cacheRoot)
            // Fill-mode renditions are larger than the cell on one side: a second table for up to 2:1 pictures.
            if slots > 0 { try pipeline.useRenditionTables(sides: [cellSize, cellSize * 2], capacity: slots) }
            return pipeline
        } catch {
            throw CommandFailure("\(error)")
        }
    }
}
