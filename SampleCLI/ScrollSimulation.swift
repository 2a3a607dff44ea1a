import Dispatch
import Foundation
import ImageOriginServer
import ImagePipelineKit

/// Drives the grid frame by frame on the main (delegate) queue.
final class ScrollSimulation: @unchecked Sendable {
    // @unchecked: every mutable property is touched on `queue` only, except `done`, handed over once.
    let pipeline: ImagePipeline
    let queue: DispatchQueue
    /// The URL of each item's image.
    let urls: [URL]
    let formats: [String]
    let layout: GridLayout
    let script: ScrollScript
    let fps: Int
    let seconds: Double
    let disappearance: DisappearanceBehavior
    let quiet: Bool
    /// Set for `scroll --compare`'s conventional run: cells load with this downloader, without the pipeline.
    var conventionalDownloader: (any ImageDownloader)?
    /// Prefetches the next `prefetchScreens` screens in the scroll's direction (pipeline runs only).
    var prefetcher: ImagePrefetcher?
    var prefetchScreens = 1
    /// The items the prefetch window holds now, and the scroll's last direction (+1 down, -1 up).
    private var prefetchWindow: Set<Int> = []
    private var direction = 1.0
    private var lastPrefetchOffset = 0.0
    /// Whether the progress line may rewrite itself (a terminal); otherwise one line a second.
    private let progressRewritesLine = isatty(STDERR_FILENO) != 0
    private let stats = ScrollStats()
    private var cells: [Int: ScrollCell] = [:]
    private var visible: Set<Int> = []
    private var lastOffset = 0.0
    /// Main-queue CPU time outside frame blocks, as of the previous frame's end.
    private var turnsAtLastFrame: Duration?
    /// Each item's image size in bytes and the link's bandwidth, when known: a stop's wait is compared with the
    /// time the link needs for the bytes its cells still lacked.
    var byteCounts: [Int]?
    var linkBytesPerSecond: Int?
    /// Whether a cell's fetch goes on at very low priority once it shows a scan
    /// (``ImageViewFetchHelper/yieldsAfterFirstPixels``).
    var yieldsAfterFirstPixels = true
    /// The stop under way: the screen has not changed since it began.
    private var stop: ScrollStop?

    init(pipeline: ImagePipeline, queue: DispatchQueue, urls: [URL], formats: [String], layout: GridLayout,
         script: ScrollScript, fps: Int, seconds: Double, disappearance: DisappearanceBehavior, quiet: Bool) {
        self.pipeline = pipeline
        self.queue = queue
        self.urls = urls
        self.formats = formats
        self.layout = layout
        self.script = script
        self.fps = fps
        self.seconds = seconds
        self.disappearance = disappearance
        self.quiet = quiet
    }

    /// What a run leaves: the report, the viewport at the end, and per-frame series for the timeline.
    struct Outcome {
        var report: ScrollReport
        var viewport: [ScrollPictures.PlacedImage]
        var busyMs: [Double]
        var imagesCompleted: [Int]
    }

    /// Runs every frame, then gathers the report.
    func run() async -> Outcome {
        let frameCount = Int(seconds * Double(fps))
        let budget = Duration.nanoseconds(1_000_000_000 / fps)
        let start = ContinuousClock.now + .milliseconds(50)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // The vsync: a thread of its own that enqueues each frame on the main queue at its time.
            Thread.detachNewThread { [self] in
                for frame in 0..<frameCount {
                    let deadline = start + budget * frame
                    let wait = deadline - .now
                    if wait > .zero { Thread.sleep(forTimeInterval: wait.milliseconds / 1000) }
                    let posted = ContinuousClock.now
                    queue.async { [self] in runFrame(frame, posted: posted, budget: budget) }
                }
                queue.async { continuation.resume() }
            }
        }
        return queue.sync {
            endStop(at: .now)
            stats.tallyEndedScrolledOffFetches()
            let outcome = Outcome(report: report(frameCount: frameCount, budget: budget), viewport: viewport(),
                                  busyMs: stats.frameLatency.map(\.milliseconds), imagesCompleted: stats.imagesCompletedPerFrame)
            // Loads still in flight stop with the run (after the report, which counts them as running), so that
            // they take neither the link nor the CPU from the next one.
            prefetcher?.stopPrefetching()
            for cell in cells.values {
                cell.conventional?.cancel()
                cell.helper.operation?.cancel()
            }
            return outcome
        }
    }

    // Runs on the main queue: a stop begins with the screen's last change and is followed frame by frame
    // until every cell on it shows pixels, then its final image.
    private func trackStop(at now: ContinuousClock.Instant) {
        if stop == nil {
            let lacking = visible.filter { cells[$0]?.shownFinal != true }
            let bytes = byteCounts.map { counts in lacking.reduce(0) { $0 + counts[$1] } }
            stop = ScrollStop(began: now, linkTime: bytes.flatMap { bytes in
                linkBytesPerSecond.map { Duration.seconds(Double(bytes) / Double($0)) }
            })
        }
        guard var current = stop else { return }
        if current.allPixels == nil, visible.allSatisfy({ cells[$0]?.shownPixels == true }) {
            current.allPixels = now - current.began
        }
        if current.allFinal == nil, visible.allSatisfy({ cells[$0]?.shownFinal == true }) {
            current.allFinal = now - current.began
        }
        current.lasted = now - current.began
        stop = current
    }

    // Runs on the main queue: the screen changed (or the run ended); a stop long enough to count is kept.
    private func endStop(at now: ContinuousClock.Instant) {
        if let stop, stop.lasted >= ScrollStop.minimum { stats.stops.append(stop) }
        stop = nil
    }

    // Runs on the main queue: each visible cell's place in the viewport and its image.
    private func viewport() -> [ScrollPictures.PlacedImage] {
        visible.sorted().compactMap { item in
            cells[item].map { cell in
                ScrollPictures.PlacedImage(x: (item % layout.columns) * layout.cellSize,
                                           y: (item / layout.columns) * layout.cellSize - Int(lastOffset),
                                           image: cell.displayedImage)
            }
        }
    }

    // Runs on the main queue.
    private func runFrame(_ frame: Int, posted: ContinuousClock.Instant, budget: Duration) {
        let began = ContinuousClock.now
        let beganCPU = threadCPUTime()
        let time = Double(frame) / Double(fps)
        let offset = min(max(0, position(at: time)), layout.maxOffset)
        lastOffset = offset
        let nowVisible = Set(layout.visibleItems(at: offset))
        for item in visible.subtracting(nowVisible) { disappear(item) }
        for item in nowVisible.subtracting(visible).sorted() { appear(item) }
        if nowVisible != visible { endStop(at: began) }
        visible = nowVisible
        trackStop(at: began)
        if offset != lastPrefetchOffset {
            direction = offset > lastPrefetchOffset ? 1 : -1
            lastPrefetchOffset = offset
        }
        movePrefetchWindow(offset: offset)
        stats.tallyEndedScrolledOffFetches()
        let showing = visible.filter { cells[$0]?.displayedImage != nil }.count
        stats.coverage.append(visible.isEmpty ? 1 : Double(showing) / Double(visible.count))
        let ended = ContinuousClock.now
        stats.frameWork.append(ended - began)
        let turns = DelegateQueueDiagnostics.workTime(on: queue) + stats.conventionalWork
        stats.mainThreadWork.append(threadCPUTime() - beganCPU + (turns - (turnsAtLastFrame ?? turns)))
        turnsAtLastFrame = turns
        // The frame waited behind earlier blocks (callbacks) and for the thread to be scheduled, then ran. The
        // vsync thread's own lateness is the harness's, not the main queue's, so it is left out.
        let latency = ended - posted
        stats.frameLatency.append(latency)
        if latency > budget { stats.dropped += 1 }
        stats.imagesCompletedPerFrame.append(stats.finalSources.values.reduce(0, +))
        if !quiet, frame % fps == 0 {
            let line = String(format: "frame %5d  offset %7.0f px  visible %2d  showing %2d  images %4d  dropped %d",
                              frame, offset, visible.count, showing, stats.finalSources.values.reduce(0, +), stats.dropped)
            // On a terminal the line rewrites itself; in a log, one line a second.
            FileHandle.standardError.write(Data((progressRewritesLine ? "\r" + line : line + "\n").utf8))
        }
    }

    /// The screens ahead of the scroll, in its direction: their cells are prefetched at low priority; cells the
    /// window left (and that did not come on screen) have their prefetch stopped.
    // Runs on the main queue.
    private func movePrefetchWindow(offset: Double) {
        guard let prefetcher else { return }
        let screen = Double(layout.rows * layout.cellSize)
        var window: [Int] = []
        for ahead in 1...prefetchScreens {
            let at = min(max(0, offset + direction * screen * Double(ahead)), layout.maxOffset)
            window += layout.visibleItems(at: at).filter { !visible.contains($0) && !window.contains($0) }
        }
        let windowSet = Set(window)
        // A cell that came on screen has its own fetch, which joined the prefetch's download: the prefetch is
        // stopped like any other that left the window (the download goes on for the cell). Left running, it
        // would outlive the cell, which cancels only its own fetch when it scrolls off.
        let left = prefetchWindow.subtracting(windowSet)
        if !left.isEmpty { prefetcher.stopPrefetching(with: left.map(prefetchRequest)) }
        let entering = window.filter { !prefetchWindow.contains($0) && cells[$0]?.displayedImage == nil }
        if !entering.isEmpty { prefetcher.startPrefetching(with: entering.map(prefetchRequest)) }
        prefetchWindow = windowSet
    }

    /// The request a cell's helper makes for `item`: the same URL and rendition, so the prefetch fills what the
    /// cell will ask for.
    private func prefetchRequest(_ item: Int) -> any FetchRequest {
        ImageViewFetchHelper.request(for: urls[item], displaySize: PixelSize(width: layout.cellSize, height: layout.cellSize))
    }

    /// Scroll offset in pixels at `time` seconds.
    private func position(at time: Double) -> Double {
        let screen = Double(layout.rows * layout.cellSize)
        switch script {
        case .steady:
            return time * 1.5 * screen
        case .fling:
            // A fling of 8 screens/s that decays (τ = 0.6 s), repeated every 2 s, always downwards.
            let period = 2.0, tau = 0.6
            let flings = (time / period).rounded(.down)
            let t = time - flings * period
            let perFling = 8 * screen * tau * (1 - exp(-period / tau))
            return flings * perFling + 8 * screen * tau * (1 - exp(-t / tau))
        case .browse:
            // Reading a feed: a screen's scroll in half a second (eased), then 2 s looking at it; three screens
            // down, one back up, and again.
            let move = 0.5, dwell = 2.0
            let pattern: [Double] = [1, 1, 1, -1]
            let step = Int(time / (move + dwell))
            let into = time - Double(step) * (move + dwell)
            var position = 0.0
            for index in 0..<step { position += pattern[index % pattern.count] }
            let progress = min(into / move, 1)
            position += pattern[step % pattern.count] * (1 - cos(Double.pi * progress)) / 2
            return position * screen
        case .backAndForth:
            // Down 4 screens and back up every 4 s: the same cells come back, from the caches.
            return 2 * screen * (1 - cos(2 * Double.pi * time / 4))
        }
    }

    // Runs on the main queue.
    private func appear(_ item: Int) {
        let cell = cells[item] ?? makeCell(item)
        let now = ContinuousClock.now
        cell.appearedAt = now
        cell.visits += 1
        // A cell that kept its image (a lowered or untouched fetch) shows it from its first frame back.
        cell.shownPixels = cell.displayedImage != nil
        if cell.shownPixels { stats.firstPixelDelays[cell.format, default: []].append(.zero) }
        cell.shownFinal = cell.shownPixels && !cell.helper.isLoading && !cell.helper.isShowingPreview
        if cell.shownFinal { stats.finalDelays[cell.format, default: []].append(.zero) }
        if let downloader = conventionalDownloader {
            cell.displayedImage = nil
            cell.shownPixels = false
            cell.shownFinal = false
            cell.conventional = ConventionalLoader(cell: cell, url: urls[item],
                                                   downloader: downloader, mainQueue: queue)
            return
        }
        let hadImage = cell.displayedImage != nil
        if cell.helper.source == nil {
            cell.helper.load(.url(urls[item]))
        } else {
            cell.helper.viewWillAppear()
            cell.helper.viewDidAppear()
        }
        // The final image came from the rendered cache before `load`/`viewWillAppear` returned (as in TIP, a
        // rendered-cache hit on the main thread completes synchronously, so the cell never shows empty).
        if !hadImage, cell.displayedImage != nil, !cell.helper.isLoading { stats.renderedHits += 1 }
    }

    // Runs on the main queue.
    private func disappear(_ item: Int) {
        guard let cell = cells[item] else { return }
        if cell.visits == 1, !cell.shownPixels { stats.firstVisitsWithoutPixels += 1 }
        if let conventional = cell.conventional {
            if !cell.shownFinal { stats.cancelled += 1 }
            conventional.cancel()
            cell.conventional = nil
            cell.displayedImage = nil
            cell.appearedAt = nil
            return
        }
        if cell.helper.isLoading, disappearance == .cancelImageFetch || disappearance == .unload { stats.cancelled += 1 }
        if let operation = cell.helper.operation, !operation.state.isFinished {
            stats.scrolledOffWhileLoading += 1
            stats.scrolledOffInFlight.append(operation)
        }
        cell.helper.viewWillDisappear()
        cell.helper.viewDidDisappear()
        cell.appearedAt = nil
    }

    private func makeCell(_ item: Int) -> ScrollCell {
        let cell = ScrollCell(item: item, format: formats[item], side: layout.cellSize, stats: stats)
        let helper = ImageViewFetchHelper(view: cell, pipeline: pipeline)
        helper.disappearanceBehavior = disappearance
        helper.yieldsAfterFirstPixels = yieldsAfterFirstPixels
        helper.delegate = cell
        cell.helper = helper
        cells[item] = cell
        return cell
    }

    // Runs on the main queue.
    private func report(frameCount: Int, budget: Duration) -> ScrollReport {
        if !quiet, progressRewritesLine { FileHandle.standardError.write(Data("\n".utf8)) }
        return ScrollReport(
            frames: frameCount, fps: fps, budgetMs: budget.milliseconds, dropped: stats.dropped,
            mainThreadP50Ms: percentile(stats.mainThreadWork, 0.5), mainThreadP99Ms: percentile(stats.mainThreadWork, 0.99),
            latencyP50Ms: percentile(stats.frameLatency, 0.5), latencyP99Ms: percentile(stats.frameLatency, 0.99),
            workP50Ms: percentile(stats.frameWork, 0.5), workP99Ms: percentile(stats.frameWork, 0.99),
            coverage: stats.coverage.isEmpty ? 0 : stats.coverage.reduce(0, +) / Double(stats.coverage.count),
            firstPixels: stats.firstPixelDelays.mapValues { ScrollReport.Latency($0) },
            finals: stats.finalDelays.mapValues { ScrollReport.Latency($0) },
            allFinals: ScrollReport.Latency(stats.finalDelays.values.flatMap { $0 }),
            allFirstPixels: ScrollReport.Latency(stats.firstPixelDelays.values.flatMap { $0 }),
            firstVisitFirstPixels: ScrollReport.Latency(stats.firstVisitFirstPixels),
            firstVisitsWithoutPixels: stats.firstVisitsWithoutPixels,
            firstVisitsCensored: ScrollReport.CensoredLatency(
                shown: stats.firstVisitFirstPixels,
                never: stats.firstVisitsWithoutPixels + visible.filter { cells[$0].map { $0.visits == 1 && !$0.shownPixels } ?? false }.count),
            sources: stats.finalSources, renderedHits: stats.renderedHits, renditionTableHits: stats.renditionTableHits,
            previews: stats.previews,
            incrementalImages: stats.incrementalImages, cancelled: stats.cancelled,
            scrolledOffWhileLoading: stats.scrolledOffWhileLoading,
            cancelledBeforeDecode: stats.cancelledBeforeDecode,
            decodeStopped: stats.decodeStopped,
            cells: cells.count, stops: ScrollReport.Stops(stats.stops))
    }

    private func percentile(_ values: [Duration], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))].milliseconds
    }
}
