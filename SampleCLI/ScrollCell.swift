import Foundation
import ImagePipelineKit

/// Where the cells are: `columns` per row, `rows` on screen, `items` in all, square cells of `cellSize` px.
struct GridLayout {
    let rows: Int
    let columns: Int
    let items: Int
    let cellSize: Int

    var totalRows: Int { (items + columns - 1) / columns }
    var maxOffset: Double { Double(max(0, totalRows - rows) * cellSize) }

    /// The items whose rows intersect the viewport at `offset` (pixels from the top).
    func visibleItems(at offset: Double) -> Range<Int> {
        let first = Int(offset) / cellSize
        let last = min(totalRows - 1, (Int(offset) + rows * cellSize - 1) / cellSize)
        return (first * columns)..<min(items, (last + 1) * columns)
    }
}

/// One cell of the grid: an ``ImageDisplaying`` view with its helper and what it saw. Main queue only.
final class ScrollCell: ImageDisplaying, ImageViewFetchHelperDelegate, @unchecked Sendable {
    let item: Int
    let format: String
    let displaySize: PixelSize
    var displayedImage: ImageContainer? {
        didSet {
            guard displayedImage != nil, !shownPixels, let appearedAt else { return }
            shownPixels = true
            stats.firstPixelDelays[format, default: []].append(.now - appearedAt)
            if visits == 1 { stats.firstVisitFirstPixels.append(.now - appearedAt) }
        }
    }
    var helper: ImageViewFetchHelper!
    /// The loader of a conventional run (`scroll --compare`), instead of the helper.
    var conventional: ConventionalLoader?
    /// When the current visit began; `nil` while off screen.
    var appearedAt: ContinuousClock.Instant?
    /// How many times the cell came on screen.
    var visits = 0
    /// Whether this visit has shown pixels, and its final image.
    var shownPixels = false
    var shownFinal = false
    /// The run's tallies (main queue only, like the cell).
    let stats: ScrollStats

    init(item: Int, format: String, side: Int, stats: ScrollStats) {
        self.item = item
        self.format = format
        self.displaySize = PixelSize(width: side, height: side)
        self.stats = stats
    }

    /// A conventional load put its image up: always final, always from the network.
    func conventionalImageShown() {
        stats.finalSources["network", default: 0] += 1
        guard !shownFinal, let appearedAt else { return }
        shownFinal = true
        stats.finalDelays[format, default: []].append(.now - appearedAt)
    }

    func imageViewFetchHelper(_ helper: ImageViewFetchHelper, didShow result: FetchResult, isFinal: Bool) {
        if isFinal {
            stats.finalSources[result.source.description, default: 0] += 1
            if result.wasLoadedFromRenditionTable { stats.renditionTableHits += 1 }
            guard !shownFinal, let appearedAt else { return }
            shownFinal = true
            stats.finalDelays[format, default: []].append(.now - appearedAt)
        } else if helper.isShowingPreview {
            stats.previews += 1
        } else {
            stats.incrementalImages += 1
        }
    }
}

/// The calling thread's CPU clock: what a block on the main queue cost, without the time it waited or was
/// descheduled (a block never changes threads while it runs).
func threadCPUTime() -> Duration {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
}

/// Tallies of one run (main queue only).
final class ScrollStats: @unchecked Sendable {
    var finalSources: [String: Int] = [:]
    var finalDelays: [String: [Duration]] = [:]
    var firstPixelDelays: [String: [Duration]] = [:]
    /// Time to first pixels on a cell's first time on screen (nothing cached for it yet).
    var firstVisitFirstPixels: [Duration] = []
    /// First visits that ended (the cell scrolled off) before any pixels showed: not in the times above, which
    /// are therefore bounded by how long a cell stays on screen.
    var firstVisitsWithoutPixels = 0
    var previews = 0
    var incrementalImages = 0
    var renderedHits = 0
    /// Final images that were kept renditions (memory or disk source, no decode).
    var renditionTableHits = 0
    var cancelled = 0
    /// Fetches still running when their cell scrolled off, until they end: then they are tallied below and let
    /// go. Holding every one to the end of the run, as a list of all of them would, held each one's last
    /// progressive scan with it, a bitmap a cell, and the harness's memory passed for the pipeline's.
    var scrolledOffInFlight: [FetchOperation] = []
    /// Of the fetches still running when their cell scrolled off: how many, how many of them ended cancelled
    /// before decoding, and how many more ended cancelled with their decode stopped midway.
    var scrolledOffWhileLoading = 0
    var cancelledBeforeDecode = 0
    var decodeStopped = 0

    /// Tallies the scrolled-off fetches that have ended and lets them go; one still running at the end of the
    /// run counts as not cancelled.
    func tallyEndedScrolledOffFetches() {
        scrolledOffInFlight.removeAll { operation in
            let state = operation.state
            guard state.isFinished else { return false }
            if state == .cancelled {
                if operation.metrics?.decodeWasInterrupted == true { decodeStopped += 1 } else { cancelledBeforeDecode += 1 }
            }
            return true
        }
    }
    /// The frame block's own time (wall clock).
    var frameWork: [Duration] = []
    /// CPU time spent on the main queue since the previous frame ended: this frame block and the turns before
    /// it (the pipeline's callbacks, measured by `DelegateQueueDiagnostics`; a conventional run's loads).
    var mainThreadWork: [Duration] = []
    /// CPU time of the conventional loads' blocks on the main queue (`scroll --compare`), all run long.
    var conventionalWork: Duration = .zero
    /// From the vsync posting the frame to the frame's end (wall clock): a frame over budget is dropped.
    var frameLatency: [Duration] = []
    var dropped = 0
    var coverage: [Double] = []
    var imagesCompletedPerFrame: [Int] = []
    /// The stops of at least ``ScrollStop/minimum``, in order.
    var stops: [ScrollStop] = []
}

/// A time the screen stayed the same (the scroll stopped, or moved less than a row): how long it took until
/// every cell on it showed pixels, then its final image, against the time the link needed for the bytes those
/// cells still lacked when it began.
struct ScrollStop {
    /// Stops shorter than this are passing moments of a scroll, not a screen someone looks at.
    static let minimum = Duration.seconds(1)

    var began: ContinuousClock.Instant
    /// The bytes of the images its cells did not show in full when it began, at the link's bandwidth.
    var linkTime: Duration?
    var allPixels: Duration?
    var allFinal: Duration?
    var lasted: Duration = .zero
}
