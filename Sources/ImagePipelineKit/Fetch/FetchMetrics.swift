import Foundation

/// What one fetch did, source by source (TIP's `TIPImageFetchMetrics`). Available from
/// ``FetchOperation/metrics`` once the operation finished.
public struct FetchMetrics: Sendable {
    /// How far a source got. Only ever increases while the source is tried.
    public enum Result: Int, Sendable, Comparable {
        /// Tried, but the fetch ended (cancelled or failed) before the source answered.
        case neverCompleted = -1
        /// The source did not have the image.
        case miss = 0
        case hitPreview = 1
        case hitProgressFrame = 2
        /// The source gave the final image.
        case hitFinal = 3

        public static func < (lhs: Result, rhs: Result) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// One source the fetch tried.
    public struct SourceInfo: Sendable {
        public var source: ImageLoadSource
        public var result: Result
        /// The fetch was cancelled while this source was being tried.
        public var wasCancelled: Bool
        /// Seconds from trying the source to its answer (or to the end of the fetch).
        public var loadDuration: TimeInterval
        /// The image came from the rendered cache before ``ImagePipeline/fetchImage(with:)`` returned, which
        /// only a call made on the delegate queue can do.
        public var wasLoadedSynchronously: Bool
        /// The final image was this source's image as a ready rendition from ``RenditionTables``: no decode.
        public var wasLoadedFromRenditionTable = false
        /// For the network: bytes of the encoded image (a resumed partial included).
        public var networkImageSizeInBytes: Int?
        /// For the network: the downloaded image's format.
        public var networkImageType: ImageType?
        /// For the network: the image's dimensions as its file declares them.
        public var networkImageDimensions: PixelSize?
        /// For ``ImageLoadSource/diskRevalidated``: the bytes of the image on disk that the origin's `304`
        /// spared downloading again.
        public var revalidationBytesSaved: Int?
        /// For the shared cache: seconds the fetch waited for another process's download (it held no fill
        /// lease); `nil` when it did not wait.
        public var sharedCacheLeaseWait: TimeInterval?

        /// For the network: pixels per encoded byte, `width × height / bytes` (how well it compressed).
        public var networkImagePixelsPerByte: Double? {
            guard let bytes = networkImageSizeInBytes, bytes > 0, let size = networkImageDimensions else { return nil }
            return Double(size.width * size.height) / Double(bytes)
        }
    }

    /// Every source tried, in order.
    public var sources: [SourceInfo]
    /// Seconds from start to the end of the fetch.
    public var totalDuration: TimeInterval
    /// Seconds from start to the first image delivered (a preview or the final one), `nil` without one.
    public var firstImageLoadDuration: TimeInterval?
    public var wasCancelled: Bool
    /// The fetch was cancelled while it decoded, and its decode stopped at a checkpoint before the end
    /// (``DecodeInterruption``).
    public var decodeWasInterrupted = false

    /// The entry for `source`, when the fetch tried it.
    public func info(for source: ImageLoadSource) -> SourceInfo? {
        sources.last { $0.source == source }
    }
}

/// Builds a fetch's ``FetchMetrics`` as it walks its sources. Used on the operation's queue only.
struct FetchMetricsRecorder {
    private var sources: [FetchMetrics.SourceInfo] = []
    private var openedAt: ContinuousClock.Instant?
    private let startedAt = ContinuousClock.now
    private var firstImageAt: ContinuousClock.Instant?
    private var decodeWasInterrupted = false
    /// The fetch's spans, whose source steps follow the recorder's.
    var trace: FetchTrace?

    /// Starts trying `source`; a source still open is closed as a miss.
    mutating func begin(_ source: ImageLoadSource) {
        close(.miss)
        trace?.beginSource(source)
        sources.append(FetchMetrics.SourceInfo(source: source, result: .neverCompleted, wasCancelled: false,
                                               loadDuration: 0, wasLoadedSynchronously: false))
        openedAt = .now
    }

    /// A resumed download that the server answered from the start is a plain network load after all.
    mutating func rekeyOpenSource(as source: ImageLoadSource) {
        guard openedAt != nil, !sources.isEmpty else { return }
        sources[sources.count - 1].source = source
    }

    /// Describes the downloaded image on the open (network) source.
    mutating func noteNetworkImage(bytes: Int, type: ImageType, dimensions: PixelSize) {
        guard openedAt != nil, !sources.isEmpty else { return }
        sources[sources.count - 1].networkImageSizeInBytes = bytes
        sources[sources.count - 1].networkImageType = type
        sources[sources.count - 1].networkImageDimensions = dimensions
    }

    /// The origin confirmed the open (revalidation) source's cached image, sparing `bytesSaved` bytes.
    mutating func noteRevalidated(bytesSaved: Int) {
        guard openedAt != nil, !sources.isEmpty else { return }
        sources[sources.count - 1].revalidationBytesSaved = bytesSaved
    }

    /// The open source gave a preview.
    mutating func hitPreview() {
        guard openedAt != nil, !sources.isEmpty else { return }
        firstImageAt = firstImageAt ?? .now
        sources[sources.count - 1].result = max(sources[sources.count - 1].result, .hitPreview)
    }

    /// The open source gave a progressive scan or an animation's first frame.
    mutating func hitProgressFrame() {
        guard openedAt != nil, !sources.isEmpty else { return }
        firstImageAt = firstImageAt ?? .now
        sources[sources.count - 1].result = max(sources[sources.count - 1].result, .hitProgressFrame)
    }

    /// The fetch's decode stopped at a checkpoint because the fetch was cancelled.
    mutating func noteDecodeInterrupted() {
        decodeWasInterrupted = true
    }

    /// The fetch waited `seconds` on the open (shared cache) source for another process's download.
    mutating func noteSharedCacheLeaseWait(_ seconds: TimeInterval) {
        guard openedAt != nil, !sources.isEmpty else { return }
        sources[sources.count - 1].sharedCacheLeaseWait = seconds
    }

    /// The open source's final image is a rendition-table hit.
    mutating func noteRenditionTableHit() {
        guard openedAt != nil, !sources.isEmpty else { return }
        sources[sources.count - 1].wasLoadedFromRenditionTable = true
    }

    /// The open source gave the final image.
    mutating func hitFinal() {
        firstImageAt = firstImageAt ?? .now
        close(.hitFinal)
    }

    /// Ends the record: a source still open never completed.
    mutating func finish(cancelled: Bool, error: FetchError? = nil) -> FetchMetrics {
        if cancelled, openedAt != nil, !sources.isEmpty { sources[sources.count - 1].wasCancelled = true }
        close(.neverCompleted)
        trace?.finish(outcome: cancelled ? "cancelled" : error == nil ? "success" : "failure", error: cancelled ? nil : error)
        let end = ContinuousClock.now
        var metrics = FetchMetrics(sources: sources, totalDuration: (end - startedAt).seconds,
                                   firstImageLoadDuration: firstImageAt.map { ($0 - startedAt).seconds },
                                   wasCancelled: cancelled)
        metrics.decodeWasInterrupted = decodeWasInterrupted
        return metrics
    }

    /// The metrics of a fetch completed by a rendered-cache hit before `fetchImage(with:)` returned.
    static func synchronousHit() -> FetchMetrics {
        var recorder = FetchMetricsRecorder()
        recorder.begin(.memoryCache)
        recorder.sources[0].wasLoadedSynchronously = true
        recorder.hitFinal()
        return recorder.finish(cancelled: false)
    }

    private mutating func close(_ result: FetchMetrics.Result) {
        guard let openedAt, !sources.isEmpty else { return }
        trace?.endSource(result: "\(max(sources[sources.count - 1].result, result))")
        sources[sources.count - 1].result = max(sources[sources.count - 1].result, result)
        sources[sources.count - 1].loadDuration = (ContinuousClock.now - openedAt).seconds
        self.openedAt = nil
    }
}

extension Duration {
    /// The duration in seconds, as `TimeInterval`.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration in whole nanoseconds, as a metrics timer records it.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
