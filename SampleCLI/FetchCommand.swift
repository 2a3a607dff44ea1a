import ArgumentParser
import Dispatch
import Foundation
import ImagePipelineHTTPClient
import ImagePipelineKit

/// `sample-cli fetch`: fetches URLs through one pipeline on disk and says where each image came from.
struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch images through a pipeline with a disk cache and report where each one came from.",
        discussion: """
            All URLs are fetched at once through one pipeline, so identical URLs share one download. The \
            pipeline's caches live under --cache-dir (default: $XDG_CACHE_HOME/ImagePipelineKit, else \
            ~/.cache/ImagePipelineKit), so a second run finds the images on disk. With \
            --cancel-after-bytes N each download is cancelled once N bytes arrived: the partial image is kept \
            (when the server sent Accept-Ranges and a validator) and the next run resumes it (source \
            networkResumed). With --json, prints one object per URL: {url, identifier, source \
            (memory|disk|diskRevalidated|additional|network|networkResumed|null), state, width, height, \
            originalWidth, originalHeight, bytes (received from the network by this fetch, a resumed part included), \
            resumed, progressiveScans, preview (null or {source, url, width, height}), durationMs, error, \
            errorCode}. A preview is the identifier's image cached from another URL; --preview stop ends the \
            fetch there (state failed, errorCode -2). Exits 0 when every fetch succeeded, 1 otherwise.
            """
    )

    @Argument(help: "The image URLs to fetch.")
    var urls: [String]

    @Option(help: ArgumentHelp("The directory holding the pipelines' caches.", valueName: "DIR"))
    var cacheDir: String?

    @Option(help: ArgumentHelp("The pipeline to fetch through ([A-Za-z0-9._-]).", valueName: "ID"))
    var pipeline = "sample-cli"

    @Option(help: ArgumentHelp("The cache identifier (one URL only); default: the URL.", valueName: "ID"))
    var identifier: String?

    @Option(help: ArgumentHelp("Decode and scale to this size.", valueName: "WxH"))
    var target: TargetOption?

    @Option(help: "How the image is fitted into --target: fit, fill, stretch or center.")
    var mode: ContentMode = .fit

    @Option(help: ArgumentHelp("The sources a fetch may use, comma-separated: memory, disk, shared, additional, network, resume.",
                               valueName: "LIST"))
    var sources: SourcesOption = SourcesOption(value: .all)

    @Option(help: ArgumentHelp("Seconds a cached image stays valid (default 30 days).", valueName: "SECONDS"))
    var ttl: Double?

    @Option(help: """
        When a disk image may be used without asking the server: ttl (TIP's time to live) or http (the server's \
        Cache-Control and Expires; stale images with a validator are revalidated, a 304 gives source diskRevalidated).
        """)
    var freshness: FreshnessChoice = .ttl

    @Flag(help: "Treat the images as placeholders: they never replace real ones and skip the rendered cache.")
    var placeholder = false

    @Option(help: "After a preview (the identifier cached from another URL): continue to the URL, or stop there.")
    var preview: PreviewChoice = .continue

    @Flag(help: "Show the scans of progressive JPEGs as they arrive (counted in progressiveScans).")
    var progressive = false

    @Option(help: "The downloader: urlsession (Foundation) or httpclient (AsyncHTTPClient).")
    var network: DownloaderChoice = .httpclient

    @Option(help: ArgumentHelp("Cancel each download once this many bytes arrived (keeps the partial).", valueName: "N"))
    var cancelAfterBytes: Int?

    @Option(help: ArgumentHelp("Fail a download whose body passes this many bytes (default 64 MiB).", valueName: "N"))
    var maxResponseBytes: Int?

    @Option(help: ArgumentHelp("Fail a download that takes longer than this in all (default 120).", valueName: "SECONDS"))
    var timeout: Double?

    @Option(help: ArgumentHelp("Fail a download slower than this on average over --min-rate-window (default 1024; 0: no minimum).",
                               valueName: "BYTES_PER_SECOND"))
    var minRate: Int?

    @Option(help: ArgumentHelp("The window --min-rate is averaged over (default 20).", valueName: "SECONDS"))
    var minRateWindow: Double?

    @Option(help: ArgumentHelp("The most bytes of decoded pixels the decodes running at once may hold (default: a quarter of RAM, 256 MiB to 1 GiB).",
                               valueName: "N"))
    var maxDecodeMemory: Int?

    @OptionGroup var output: JSONOutput

    func validate() throws {
        for url in urls where URL(string: url)?.scheme == nil {
            throw ValidationError("not an absolute URL: \(url)")
        }
        if identifier != nil, urls.count > 1 { throw ValidationError("--identifier needs exactly one URL") }
        if let cancelAfterBytes, cancelAfterBytes < 1 { throw ValidationError("--cancel-after-bytes must be at least 1") }
        if let ttl, ttl <= 0 { throw ValidationError("--ttl must be positive") }
        if let maxResponseBytes, maxResponseBytes < 1 { throw ValidationError("--max-response-bytes must be at least 1") }
        if let timeout, !(timeout > 0) { throw ValidationError("--timeout must be positive") }
        if let minRate, minRate < 0 { throw ValidationError("--min-rate cannot be negative") }
        if let minRateWindow, !(minRateWindow > 0) { throw ValidationError("--min-rate-window must be positive") }
        if let maxDecodeMemory, maxDecodeMemory < 1 { throw ValidationError("--max-decode-memory must be at least 1") }
    }

    func run() async throws {
        let configuration = GlobalConfiguration()
        // The CLI has no UI main loop to serve; callbacks go to a queue of their own.
        configuration.delegateQueue = DispatchQueue(label: "sample-cli.fetch.delegate")
        let downloader: any ImageDownloader = switch network {
        case .urlsession: URLSessionDownloader()
        case .httpclient: HTTPClientDownloader()
        }
        configuration.imageDownloader = downloader
        configuration.downloadLimits = downloadLimits
        configuration.problemObserver = ProblemWarnings()
        if let maxDecodeMemory { configuration.maxBytesForDecodesInFlight = maxDecodeMemory }
        let root = cacheDir.map { URL(fileURLWithPath: $0) } ?? ImagePipeline.defaultCacheRoot
        let pipeline: ImagePipeline
        do {
            pipeline = try ImagePipeline(identifier: self.pipeline, configuration: configuration, cacheRoot: root)
        } catch {
            throw CommandFailure("\(error)")
        }
        pipeline.freshnessPolicy = freshness == .http ? .http : .timeToLive
        let requests = urls.map { string in
            GenericFetchRequest(
                url: URL(string: string)!, identifier: identifier,
                targetSizing: TargetSizing(dimensions: target?.size, contentMode: mode),
                timeToLive: ttl ?? 0, options: placeholder ? [.treatAsPlaceholder] : [],
                loadingSources: sources.value)
        }
        let reports = await withTaskGroup(of: (Int, FetchReport).self) { group in
            for (index, request) in requests.enumerated() {
                group.addTask { [cancelAfterBytes, preview, progressive] in
                    (index, await Self.fetch(request, through: pipeline, cancelAfterBytes: cancelAfterBytes,
                                             preview: preview == .stop ? .stopLoading : .continueLoading,
                                             progressive: progressive))
                }
            }
            var reports = [FetchReport?](repeating: nil, count: requests.count)
            for await (index, report) in group { reports[index] = report }
            return reports.compactMap { $0 }
        }
        // Written straight to the file descriptor (print buffers when stdout is not a terminal): the reports
        // are out before the downloader shuts down.
        for report in reports { output.say(report.textLine()) }
        try output.write(lines: reports.map { $0.jsonLine() })
        try await (downloader as? HTTPClientDownloader)?.shutdown()
        if reports.contains(where: { $0.result == nil }) { throw ExitCode(1) }
    }

    /// The defaults, with what the options change.
    private var downloadLimits: DownloadLimits {
        var limits = DownloadLimits()
        if let maxResponseBytes { limits.maxResponseBytes = maxResponseBytes }
        if let timeout { limits.totalTimeout = .milliseconds(Int64(timeout * 1000)) }
        if minRate != nil || minRateWindow != nil {
            let rate = minRate ?? limits.minimumTransferRate?.bytesPerSecond ?? 1024
            let window = minRateWindow.map { Duration.milliseconds(Int64($0 * 1000)) } ?? limits.minimumTransferRate?.window ?? .seconds(20)
            limits.minimumTransferRate = rate > 0 ? MinimumTransferRate(bytesPerSecond: rate, window: window) : nil
        }
        return limits
    }

    /// One fetch through the events API; leaving the loop early (after `cancelAfterBytes`) cancels it.
    private static func fetch(_ request: GenericFetchRequest, through pipeline: ImagePipeline, cancelAfterBytes: Int?,
                              preview: PreviewDecision, progressive: Bool) async -> FetchReport {
        let started = ContinuousClock.now
        let events = pipeline.events(for: request, previewDecision: preview, loadsProgressively: progressive)
        var result: FetchResult?
        var failure: FetchError?
        var scans = 0
        do {
            for try await event in events {
                switch event {
                case .finished(let final):
                    result = final
                case .progress:
                    if let cancelAfterBytes, events.operation.receivedByteCount >= cancelAfterBytes {
                        events.operation.cancel()
                    }
                case .progressiveImage:
                    scans += 1
                case .started, .willAttemptToLoad, .preview, .firstAnimatedFrame:
                    break
                }
            }
        } catch let error as FetchError {
            failure = error
        } catch {
            failure = FetchError(.unknown, underlying: error)
        }
        let operation = events.operation
        return FetchReport(request: request, state: operation.state, receivedByteCount: operation.receivedByteCount,
                           preview: operation.previewResult.map(FetchReport.Shown.init), result: result.map(FetchReport.Shown.init),
                           error: failure, progressiveScans: scans, duration: ContinuousClock.now - started)
    }
}

/// `--preview continue|stop`.
enum PreviewChoice: String, ExpressibleByArgument, CaseIterable {
    case `continue`, stop
}

/// The downloaders `--network` chooses from.
enum DownloaderChoice: String, ExpressibleByArgument, CaseIterable {
    case urlsession, httpclient
}

/// `--freshness ttl|http`: the pipeline's ``CacheFreshnessPolicy``.
enum FreshnessChoice: String, ExpressibleByArgument, CaseIterable {
    case ttl, http
}

/// `--sources memory,disk,additional,network,resume`.
struct SourcesOption: ExpressibleByArgument {
    var value: LoadingSources

    init(value: LoadingSources) { self.value = value }

    init?(argument: String) {
        var sources: LoadingSources = []
        for name in argument.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }) {
            switch name {
            case "memory": sources.insert(.memoryCache)
            case "disk": sources.insert(.diskCache)
            case "shared": sources.insert(.sharedCache)
            case "additional": sources.insert(.additionalCache)
            case "network": sources.insert(.network)
            case "resume": sources.insert(.networkResumed)
            default: return nil
            }
        }
        guard !sources.isEmpty else { return nil }
        value = sources
    }

    var defaultValueDescription: String { "all" }
}

/// What `sample-cli fetch` prints about one URL. It keeps what it prints, not the images: a run of many
/// large images would otherwise hold every decoded image until the last one finished.
struct FetchReport {
    /// An image the fetch delivered, described.
    struct Shown {
        let source: ImageLoadSource
        let url: URL
        let dimensions: PixelSize
        let originalDimensions: PixelSize

        init(_ result: FetchResult) {
            source = result.source
            url = result.url
            dimensions = result.image.dimensions
            originalDimensions = result.originalDimensions
        }
    }

    let request: GenericFetchRequest
    let state: FetchOperation.State
    let receivedByteCount: Int
    let preview: Shown?
    let result: Shown?
    let error: FetchError?
    let progressiveScans: Int
    let duration: Duration

    static func stateName(_ state: FetchOperation.State) -> String {
        switch state {
        case .idle: "idle"
        case .starting: "starting"
        case .loadingFromMemory: "loadingFromMemory"
        case .loadingFromDisk: "loadingFromDisk"
        case .loadingFromSharedCache: "loadingFromSharedCache"
        case .loadingFromAdditionalCache: "loadingFromAdditionalCache"
        case .loadingFromNetwork: "loadingFromNetwork"
        case .cancelled: "cancelled"
        case .failed: "failed"
        case .succeeded: "succeeded"
        }
    }

    func jsonLine() -> String {
        var object: [String: Any] = [
            "url": request.url.absoluteString, "identifier": request.resolvedIdentifier,
            "source": result.map { String(describing: $0.source) } ?? NSNull(),
            "state": Self.stateName(state),
            "bytes": receivedByteCount, "resumed": result?.source == .networkResumed,
            "durationMs": (duration.milliseconds * 1000).rounded() / 1000,
            "error": error.map { "\($0)" } ?? NSNull(), "errorCode": error.map { $0.code.rawValue } ?? NSNull(),
            "downloadError": (error?.underlying as? DownloadError).map { String(describing: $0.code) } ?? NSNull(),
            "progressiveScans": progressiveScans,
        ]
        if let preview {
            object["preview"] = ["source": String(describing: preview.source), "url": preview.url.absoluteString,
                                 "width": preview.dimensions.width, "height": preview.dimensions.height]
        } else {
            object["preview"] = NSNull()
        }
        for (key, value) in [("width", result?.dimensions.width), ("height", result?.dimensions.height),
                             ("originalWidth", result?.originalDimensions.width),
                             ("originalHeight", result?.originalDimensions.height)] {
            object[key] = value ?? NSNull()
        }
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    func textLine() -> String {
        let time = String(format: "%.1f ms", duration.milliseconds)
        guard let result else {
            let received = receivedByteCount > 0 ? " after \(receivedByteCount) bytes" : ""
            return "\(request.url.absoluteString.terminalSafe): \(Self.stateName(state))\(received): \((error.map { "\($0)" } ?? "no image").terminalSafe), \(time)"
        }
        let size = result.dimensions == result.originalDimensions
            ? "\(result.originalDimensions)" : "\(result.originalDimensions) -> \(result.dimensions)"
        let bytes = receivedByteCount > 0 ? ", \(receivedByteCount) bytes" : ""
        return "\(request.url.absoluteString.terminalSafe): from \(String(describing: result.source)), \(size)\(bytes), \(time)"
    }
}

/// Prints each problem the pipeline meets as a warning on stderr: a store a full disk refused, a disk cache
/// that cannot be opened, an image that did not decode. The fetch goes on; the person running it should know.
final class ProblemWarnings: ProblemObserver {
    func problemWasEncountered(_ problem: ImagePipelineProblem) {
        FileHandle.standardError.write(Data("warning: \(String(describing: problem).terminalSafe)\n".utf8))
    }
}
