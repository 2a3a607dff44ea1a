import Foundation

/// What `sample-cli scroll` measured: the summary table and the `--json` report.
struct ScrollReport {
    /// p50 and p95 of a set of delays, in milliseconds.
    struct Latency {
        var count: Int
        var p50Ms: Double
        var p95Ms: Double

        init(_ delays: [Duration]) {
            let sorted = delays.map(\.milliseconds).sorted()
            count = sorted.count
            p50Ms = sorted.isEmpty ? 0 : sorted[sorted.count / 2]
            p95Ms = sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * 95 / 100)]
        }

        var json: [String: Any] { ["count": count, "p50Ms": p50Ms, "p95Ms": p95Ms] }

    }

    /// After each stop of the scroll (a screen unchanged for ``ScrollStop/minimum`` or more): how long until every
    /// cell on it showed pixels and until every one showed its final image ("never" when the stop ended first),
    /// and that last wait against the time the link needed for the bytes those cells lacked.
    struct Stops {
        var count: Int
        /// The worst stop's waits; `nil`, "never", when some stop ended before.
        var allPixelsWorstMs: Double?
        var allFinalWorstMs: Double?
        /// Stops whose cells all showed pixels, and all their final images, before the stop ended.
        var allPixelsCount: Int
        var allFinalCount: Int
        /// The largest ratio of the wait for every final image to the link's time for the lacking bytes, over the
        /// stops that needed bytes and got them all.
        var worstFinalToLinkTime: Double?

        init(_ stops: [ScrollStop]) {
            count = stops.count
            allPixelsCount = stops.filter { $0.allPixels != nil }.count
            allFinalCount = stops.filter { $0.allFinal != nil }.count
            allPixelsWorstMs = allPixelsCount == count ? stops.compactMap(\.allPixels).max()?.milliseconds : nil
            allFinalWorstMs = allFinalCount == count ? stops.compactMap(\.allFinal).max()?.milliseconds : nil
            worstFinalToLinkTime = stops.compactMap { stop -> Double? in
                guard let final = stop.allFinal, let link = stop.linkTime, link > .milliseconds(1) else { return nil }
                return final.milliseconds / link.milliseconds
            }.max()
        }

        /// "worst 2017 ms", or "2 of 8 never" when some stop ended first.
        var allPixelsText: String { worst(allPixelsWorstMs, reached: allPixelsCount) }
        var allFinalText: String { worst(allFinalWorstMs, reached: allFinalCount) }

        private func worst(_ ms: Double?, reached: Int) -> String {
            ms.map { String(format: "worst %.0f ms", $0) } ?? "\(count - reached) of \(count) never"
        }

        var text: String {
            guard count > 0 else { return "no stop of a second or more" }
            return "\(count) stops: all pixels \(allPixelsText); all final \(allFinalText)"
                + (worstFinalToLinkTime.map { String(format: " (%.2fx the link's time)", $0) } ?? "")
        }

        var json: [String: Any] {
            ["count": count, "allPixelsCount": allPixelsCount, "allFinalCount": allFinalCount,
             "allPixelsWorstMs": allPixelsWorstMs ?? NSNull(), "allFinalWorstMs": allFinalWorstMs ?? NSNull(),
             "worstFinalToLinkTime": worstFinalToLinkTime ?? NSNull()]
        }
    }

    /// Time to first pixels over every visit, counting a visit that ended (or the run ended) without pixels as
    /// "never": a censored sample. A percentile is `nil`, "never", when the visits that showed pixels are too few
    /// to reach it, so a loader that shows a quarter of its cells has no p50 however fast that quarter was.
    struct CensoredLatency {
        var visits: Int
        var shown: Int
        var p50Ms: Double?
        var p95Ms: Double?

        init(shown delays: [Duration], never: Int) {
            let sorted = delays.map(\.milliseconds).sorted()
            visits = sorted.count + never
            shown = sorted.count
            // The same ranks as ``Latency``'s, taken over every visit; ranks past the shown ones are "never".
            func rank(_ index: Int) -> Double? { index < sorted.count ? sorted[index] : nil }
            p50Ms = visits == 0 ? nil : rank(visits / 2)
            p95Ms = visits == 0 ? nil : rank(min(visits - 1, visits * 95 / 100))
        }

        /// "412 / never ms (26 of 90)".
        var text: String {
            func value(_ ms: Double?) -> String { ms.map { String(format: "%.0f", $0) } ?? "never" }
            return "\(value(p50Ms)) / \(value(p95Ms)) ms (\(shown) of \(visits))"
        }

        /// `null` stands for "never".
        var json: [String: Any] {
            ["visits": visits, "shown": shown, "p50Ms": p50Ms ?? NSNull(), "p95Ms": p95Ms ?? NSNull()]
        }
    }

    var frames: Int
    var fps: Int
    var budgetMs: Double
    var dropped: Int
    /// Main-thread work per frame: the CPU time the main thread spent on the frame and on the callbacks since
    /// the frame before: what must stay well inside the frame budget for a scroll from warm caches to drop nothing.
    var mainThreadP50Ms: Double
    var mainThreadP99Ms: Double
    /// Frame latency: from the vsync posting a frame to its end, waits included; over the budget, it is dropped.
    var latencyP50Ms: Double
    var latencyP99Ms: Double
    /// The frame block's own time (wall clock).
    var workP50Ms: Double
    var workP99Ms: Double
    /// Average, over frames, of the share of visible cells showing an image.
    var coverage: Double
    /// Per format: time from a cell appearing to its first pixels, and to its final image.
    var firstPixels: [String: Latency]
    var finals: [String: Latency]
    /// Time to the final image, and to first pixels, over every format.
    var allFinals: Latency
    var allFirstPixels: Latency
    /// Time to first pixels on cells' first time on screen.
    var firstVisitFirstPixels: Latency
    /// First visits that ended before any pixels showed (not in `firstVisitFirstPixels`).
    var firstVisitsWithoutPixels: Int
    /// Time to first pixels over all first visits, those that never showed pixels included (censored): the
    /// visits still on screen without pixels when the run ended count as never too.
    var firstVisitsCensored: CensoredLatency
    var sources: [String: Int]
    var renderedHits: Int
    var renditionTableHits: Int
    var previews: Int
    var incrementalImages: Int
    var cancelled: Int
    /// Fetches still running when their cell scrolled off, how many of them ended cancelled before decoding
    /// (the scroll benchmark's target is at least 90%: a cell scrolled off should cost no decode), and how many
    /// more ended cancelled with their decode stopped midway. One still
    /// running at the end counts as not cancelled.
    var scrolledOffWhileLoading: Int
    var cancelledBeforeDecode: Int
    var decodeStopped: Int
    var cells: Int
    /// The screens the scroll stopped on for at least a second.
    var stops: Stops
    var network = ""
    var script = ""
    /// The caches at the start: cold, disk or memory (`--warm`).
    var warm = "cold"
    var delegateQueueViolations = 0
    var bytesTransferred = 0
    var requests = 0
    var cacheTotals: [String: Int] = [:]
    /// The run's peak resident memory, the whole process's: the pipeline, the embedded origin, the runtime.
    var peakResidentBytes = 0
    /// The resident memory just before the run's pipeline was made: the runtime, the embedded origin and the
    /// pictures it serves (the origin's share, which an app would not have); the peak less this is the run's.
    var residentBeforeRunBytes = 0
    /// The bytes of the pictures the embedded origin holds to serve (0 for an external origin).
    var originPictureBytes = 0
    /// The most decode working memory (pixels and a progressive JPEG's coefficients) held at once by the run's
    /// decodes and progressive sessions (``GlobalConfiguration/peakBytesForDecodesInFlight``).
    var peakDecodeBytes = 0
    /// Fetches that joined a download already under way (the coordinator's count).
    var sharedDownloads = 0
    /// Prefetches that ended with an image (`--prefetch-screens`).
    var prefetchesCompleted = 0

    func table() -> String {
        var lines: [String] = []
        func row(_ name: String, _ value: String) { lines.append(name.padding(toLength: 50, withPad: " ", startingAt: 0) + value) }
        row("script / network / caches", "\(script) / \(network) / \(warm), \(cells) cells visited")
        row("frames", "\(frames) at \(fps) fps (budget \(String(format: "%.2f", budgetMs)) ms)")
        row("dropped frames", "\(dropped) (\(String(format: "%.1f", Double(dropped) * 100 / Double(max(frames, 1))))%)")
        row("main-thread work per frame p50 / p99", String(format: "%.3f / %.3f ms CPU (frame block alone %.3f / %.3f ms)",
                                                             mainThreadP50Ms, mainThreadP99Ms, workP50Ms, workP99Ms))
        row("frame latency p50 / p99", String(format: "%.3f / %.3f ms (vsync to frame done, waits included)",
                                              latencyP50Ms, latencyP99Ms))
        row("visible cells showing an image", String(format: "%.1f%% of cell-frames", coverage * 100))
        for format in Set(firstPixels.keys).union(finals.keys).sorted() {
            let first = firstPixels[format].map { String(format: "%.1f / %.1f ms", $0.p50Ms, $0.p95Ms) } ?? "-"
            let final = finals[format].map { String(format: "%.1f / %.1f ms (n=%d)", $0.p50Ms, $0.p95Ms, $0.count) } ?? "-"
            row("  \(format): first pixels; final p50/p95", "\(first); \(final)")
        }
        row("after each stop, every cell on screen", stops.text)
        row("first visits: first pixels p50 / p95, all", firstVisitsCensored.text + " (a visit without pixels: never)")
        let order = ["memory", "disk", "diskRevalidated", "additional", "network", "networkResumed"]
        row("final images by source", order.compactMap { key in sources[key].map { "\(key) \($0)" } }.joined(separator: ", ")
            + " (of which shown before load returned: \(renderedHits); kept renditions, no decode: \(renditionTableHits))")
        row("previews / scans and first frames", "\(previews) / \(incrementalImages)")
        row("fetches cancelled off screen", "\(cancelled)")
        row("off screen mid-fetch / cancelled before decode",
            "\(scrolledOffWhileLoading) / \(cancelledBeforeDecode)"
            + (scrolledOffWhileLoading > 0 ? String(format: " (%.0f%%)", 100 * Double(cancelledBeforeDecode) / Double(scrolledOffWhileLoading)) : "")
            + "; \(decodeStopped) more stopped mid-decode")
        row("fetches that joined a running download", "\(sharedDownloads)")
        row("prefetches completed", "\(prefetchesCompleted)")
        row("requests / bytes transferred", requests < 0 ? "unknown (external origin)" : "\(requests) / \(bytesTransferred)")
        row("cache totals", "rendered \(cacheTotals["renderedBytes"] ?? 0) B (limit \(cacheTotals["renderedLimitBytes"] ?? 0)), memory \(cacheTotals["memoryBytes"] ?? 0) B, disk \(cacheTotals["diskBytes"] ?? 0) B")
        row("peak resident memory", "\(peakResidentBytes >> 20) MiB: \(max(0, peakResidentBytes - residentBeforeRunBytes) >> 20) MiB over "
            + "the \(residentBeforeRunBytes >> 20) MiB before the run (runtime, origin, its \(originPictureBytes >> 20) MiB of pictures)")
        row("peak decode working memory", "\(peakDecodeBytes >> 20) MiB (pixels and progressive coefficients held at once)")
        row("decode/scale/disk on the main queue", delegateQueueViolations == 0 ? "none (checked)" : "\(delegateQueueViolations) — FAIL")
        return lines.joined(separator: "\n")
    }

    /// Several runs in columns: the rows that tell them apart.
    static func sideBySide(_ runs: [(name: String, report: ScrollReport)]) -> String {
        func cell(_ text: String) -> String { text.padding(toLength: 31, withPad: " ", startingAt: 0) }
        var lines = [cell("") + runs.map { cell($0.name) }.joined()]
        func row(_ name: String, _ value: (ScrollReport) -> String) {
            lines.append(cell(name) + runs.map { cell(value($0.report)) }.joined())
        }
        row("frames (budget)") { "\($0.frames) (\(String(format: "%.2f", $0.budgetMs)) ms)" }
        row("dropped frames") { "\($0.dropped) (\(String(format: "%.1f", Double($0.dropped) * 100 / Double(max($0.frames, 1))))%)" }
        row("effective fps") { String(format: "%.1f", Double($0.fps) * (1 - Double($0.dropped) / Double(max($0.frames, 1)))) }
        row("main-thread work p50 / p99") { String(format: "%.2f / %.2f ms", $0.mainThreadP50Ms, $0.mainThreadP99Ms) }
        row("frame latency p50 / p99") { String(format: "%.2f / %.2f ms", $0.latencyP50Ms, $0.latencyP99Ms) }
        row("cells showing an image") { String(format: "%.1f%%", $0.coverage * 100) }
        func latency(_ value: Latency) -> String {
            value.count == 0 ? "- (none)" : String(format: "%.0f / %.0f ms (n=%d)", value.p50Ms, value.p95Ms, value.count)
        }
        row("first pixels p50 / p95") { latency($0.allFirstPixels) }
        row("  first visits only") { latency($0.firstVisitFirstPixels) }
        row("  all first visits") { $0.firstVisitsCensored.text }
        row("  first visits with pixels") {
            let visits = $0.firstVisitFirstPixels.count + $0.firstVisitsWithoutPixels
            return "\($0.firstVisitFirstPixels.count) of \(visits)"
                + (visits > 0 ? String(format: " (%.0f%%)", 100 * Double($0.firstVisitFirstPixels.count) / Double(visits)) : "")
        }
        row("final image p50 / p95") { latency($0.allFinals) }
        row("after stops: all pixels") { $0.stops.count == 0 ? "-" : $0.stops.allPixelsText }
        row("after stops: all final") {
            $0.stops.count == 0 ? "-" : $0.stops.allFinalText + ($0.stops.worstFinalToLinkTime.map { String(format: " (%.2fx)", $0) } ?? "")
        }
        row("prefetches completed") { "\($0.prefetchesCompleted)" }
        row("requests") { "\($0.requests)" }
        row("bytes transferred") { "\($0.bytesTransferred)" }
        row("peak resident (before run)") { "\($0.peakResidentBytes >> 20) MiB (\($0.residentBeforeRunBytes >> 20))" }
        row("decode/scale/disk on main") { "\($0.delegateQueueViolations)" }
        return lines.joined(separator: "\n")
    }

    static func jsonData(_ runs: [String: ScrollReport]) throws -> Data {
        let object = try runs.mapValues { try JSONSerialization.jsonObject(with: $0.jsonData()) }
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
    }

    func jsonData() throws -> Data {
        let object: [String: Any] = [
            "script": script, "network": network, "warm": warm, "frames": frames, "fps": fps, "frameBudgetMs": budgetMs,
            "droppedFrames": dropped, "mainThreadWorkMsPerFrame": ["p50": mainThreadP50Ms, "p99": mainThreadP99Ms],
            "frameLatencyMs": ["p50": latencyP50Ms, "p99": latencyP99Ms],
            "frameWorkMs": ["p50": workP50Ms, "p99": workP99Ms], "visibleCellsShowingImage": coverage,
            "timeToFirstPixels": firstPixels.mapValues(\.json), "timeToFinalImage": finals.mapValues(\.json), "timeToFinalImageAllFormats": allFinals.json, "timeToFirstPixelsAllFormats": allFirstPixels.json,
            "timeToFirstPixelsFirstVisits": firstVisitFirstPixels.json,
            "firstVisitsWithoutPixels": firstVisitsWithoutPixels,
            "timeToFirstPixelsAllFirstVisits": firstVisitsCensored.json,
            "finalImagesBySource": sources, "shownBeforeLoadReturned": renderedHits, "renditionTableHits": renditionTableHits, "previews": previews,
            "scansAndFirstFrames": incrementalImages, "fetchesCancelled": cancelled, "requests": requests,
            "scrolledOffWhileLoading": scrolledOffWhileLoading, "cancelledBeforeDecode": cancelledBeforeDecode, "decodeStoppedMidway": decodeStopped,
            "bytesTransferred": bytesTransferred, "cacheTotals": cacheTotals, "peakResidentBytes": peakResidentBytes,
            "residentBeforeRunBytes": residentBeforeRunBytes, "originPictureBytes": originPictureBytes,
            "peakDecodeBytes": peakDecodeBytes,
            "cellsVisited": cells, "mainQueueViolations": delegateQueueViolations, "sharedDownloads": sharedDownloads,
            "prefetchesCompleted": prefetchesCompleted, "stops": stops.json,
        ]
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
    }
}
