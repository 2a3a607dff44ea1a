import Foundation

// The vocabulary between fetches and the ``DownloadCoordinator``: what a fetch asks the network for, what it
// hears back, and how it can fail.

/// One fetch's request for image bytes from the network (the coordinator's input; TIP's download request).
///
/// Fetches whose requests have the same URL, identifier, pipeline, headers and ``hydrationKey`` share one
/// download (none is shared when a hydration or authorization closure comes without a key).
public struct ImageDownloadRequest: Sendable {
    /// Rewrites the download request before it is sent (TIP's hydration block): add headers, sign it. It must
    /// not change the URL (``ImageDownloadError/illegalHydrationModification``); throwing fails the load with
    /// ``ImageDownloadError/hydration(_:)``.
    public typealias Hydration = @Sendable (DownloadRequest) async throws -> DownloadRequest
    /// The value of the `Authorization` header for a request, or `nil` for none (TIP's authorization block);
    /// throwing fails the load with ``ImageDownloadError/authorization(_:)``.
    public typealias Authorization = @Sendable (DownloadRequest) async throws -> String?

    public var url: URL
    /// The cache identifier of the image (shared downloads need equal identifiers, as in TIP).
    public var identifier: String
    /// The pipeline the fetch runs in (downloads are never shared across pipelines).
    public var pipelineIdentifier: String
    /// Extra header fields sent with the request.
    public var headers: DownloadHeaders
    public var limits: DownloadLimits
    public var hydration: Hydration?
    public var authorization: Authorization?
    /// Names what ``hydration`` and ``authorization`` do, for sharing: Swift closures have no identity, so two
    /// requests with either closure share a download only when both give the same key. `nil` with a closure
    /// present: never shared.
    public var hydrationKey: String?
    /// The start of the image, kept from an earlier download: the coordinator asks only for the rest when
    /// the partial carries a validator (`If-Range`: a strong ETag, else Last-Modified).
    public var partial: PartialImageData?
    /// What the response of a cached, stale image said, to revalidate it: the request carries
    /// `If-None-Match` (its ETag) and `If-Modified-Since` (its Last-Modified), and a `304` ends the load as
    /// ``DownloadOutcome/notModified(_:)``. Ignored when ``partial`` is set.
    public var revalidating: HTTPCacheMetadata?

    public init(
        url: URL, identifier: String? = nil, pipelineIdentifier: String, headers: DownloadHeaders = DownloadHeaders(),
        limits: DownloadLimits = DownloadLimits(), hydration: Hydration? = nil, authorization: Authorization? = nil,
        hydrationKey: String? = nil, partial: PartialImageData? = nil, revalidating: HTTPCacheMetadata? = nil
    ) {
        self.url = url
        self.identifier = identifier ?? url.absoluteString
        self.pipelineIdentifier = pipelineIdentifier
        self.headers = headers
        self.limits = limits
        self.hydration = hydration
        self.authorization = authorization
        self.hydrationKey = hydrationKey
        self.partial = partial
        self.revalidating = revalidating
    }

    /// The conditional header fields for ``revalidating`` (none for a resume, or without validators).
    var conditionalHeaders: [(name: String, value: String)] {
        guard partial == nil, let cached = revalidating else { return [] }
        var fields: [(name: String, value: String)] = []
        if let tag = cached.entityTag, !tag.isEmpty { fields.append(("If-None-Match", tag)) }
        if let date = cached.lastModified, !date.isEmpty { fields.append(("If-Modified-Since", date)) }
        return fields
    }

    /// What identical downloads have in common; `nil` when this request must not be shared.
    var sharingKey: SharingKey? {
        if (hydration != nil || authorization != nil) && hydrationKey == nil { return nil }
        // A conditional download shares only with loads holding the same cached image: a 304 has no bytes to
        // give a load without one.
        return SharingKey(url: url.absoluteString, identifier: identifier, pipeline: pipelineIdentifier,
                          headers: (headers.map { ($0.name, $0.value) } + conditionalHeaders).map { "\($0.name.lowercased()):\($0.value)" },
                          hydrationKey: hydrationKey)
    }

    struct SharingKey: Hashable {
        var url: String
        var identifier: String
        var pipeline: String
        var headers: [String]
        var hydrationKey: String?
    }
}

/// Hears one fetch's share of a download. Called on the coordinator's queue, in order: at most one
/// response, then appended chunks, then exactly one finish. Return quickly (hop to your own queue for
/// decoding): every download's events go through that queue.
public protocol DownloadClient: AnyObject, Sendable {
    /// The response head. `resumedByteCount` is how many bytes of an earlier partial the response continues
    /// (a `206`); 0 when the image starts over — after a resume attempt, that means the partial was dropped
    /// (TIP's "did reset from partial image"). `expectedByteCount` is the whole image's length when known.
    func downloadAttachment(_ attachment: DownloadAttachment, didReceive response: DownloadResponse, resumedByteCount: Int,
                     expectedByteCount: Int?)
    /// More image bytes; `totalByteCount` counts everything so far, a resumed partial included. A fetch that
    /// joins a running download gets the bytes so far as one chunk.
    func downloadAttachment(_ attachment: DownloadAttachment, didAppend chunk: Data, totalByteCount: Int)
    /// The end of this fetch's share: the whole image, or why not.
    func downloadAttachment(_ attachment: DownloadAttachment, didFinishWith outcome: DownloadOutcome)
}

/// A client that handles its events on a serial queue of its own (a fetch's): the coordinator brings the events
/// of a download such a client starts to that queue and does its own part there, in a `sync` turn of its
/// queue, so that they reach the client without waking a thread in between. Its calls then come while that
/// queue runs a block, so it never `sync`s onto it from them.
protocol QueueBoundDownloadClient: DownloadClient {
    var eventQueue: DispatchQueue { get }
}

/// How a fetch's share of a download ended.
public enum DownloadOutcome: Sendable {
    case success(DownloadResult)
    /// `partial` is what to keep for resuming: only for the fetch that owned the download (the first
    /// attached), and only when the server allows ranges and gave a validator.
    case failure(ImageDownloadError, partial: PartialImageData?)
    /// The origin answered a conditional request (``ImageDownloadRequest/revalidating``) with `304 Not
    /// Modified`: the cached image is current. The response carries the metadata to refresh it with.
    case notModified(DownloadResponse)
}

/// A complete image from the network.
public struct DownloadResult: Sendable {
    /// Every byte of the image, a resumed partial included.
    public var data: Data
    public var response: DownloadResponse
    /// Whether the bytes continue a partial from the caches (a `206`).
    public var wasResumed: Bool
    /// Whether this fetch owned the download (TIP gives the bytes to store only to the first fetch).
    public var isOwner: Bool
    /// A transport error that came after every byte had arrived (TIP's "unnecessary error"; CDNs often break
    /// the connection after the last byte): the image is whole, and the error is reported as a problem instead.
    public var unnecessaryError: DownloadError?
}

/// Why a network load failed.
public enum ImageDownloadError: Error, Sendable, CustomStringConvertible {
    /// The fetch detached (TIP's cancelled, −1).
    case cancelled
    /// The server answered with a status other than 200/206 (TIP's HTTP transaction error, 2).
    case httpStatus(Int)
    /// The transfer failed (TIP's HTTP transaction error, 2).
    case download(DownloadError)
    /// The hydration changed the URL (TIP's illegal modification by hydration block, 4).
    case illegalHydrationModification
    /// The hydration threw this.
    case hydration(any Error)
    /// The authorization threw this.
    case authorization(any Error)
    /// The response ended cleanly before the image did: short of its `Content-Length`, or, without one,
    /// before its format's end (a JPEG's last marker, a PNG's `IEND`, a GIF's trailer, the declared size of a
    /// WebP or AVIF). A connection cut halfway looks like this (TIP's HTTP transaction error, 2).
    case truncatedImage

    public var description: String {
        switch self {
        case .cancelled: "cancelled"
        case .httpStatus(let status): "HTTP status \(status)"
        case .download(let error): error.description
        case .illegalHydrationModification: "the hydration changed the URL"
        case .hydration(let error): "hydration failed: \(error)"
        case .authorization(let error): "authorization failed: \(error)"
        case .truncatedImage: "the response ended before the image did"
        }
    }
}
