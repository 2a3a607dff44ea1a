import Foundation

/// An image a fetch delivered (TIP's `TIPImageFetchResult`): a preview, a progressive scan or the final image.
public struct FetchResult: Sendable {
    /// The image at the request's target sizing.
    public var image: ImageContainer
    public var source: ImageLoadSource
    /// The URL the image came from (for a rendered-cache hit, the URL it was first loaded from).
    public var url: URL
    /// The image's own dimensions, as its file declares them (after EXIF orientation). TIP reported the
    /// decode-at-target size here when a smaller target was given (a 1000x800 file fetched at 100x100 showed
    /// 100x80), while its disk metadata kept the file's size; this is always the file's.
    public var originalDimensions: PixelSize
    public var isPlaceholder: Bool
    public var identifier: String
    /// The request's transformer changed the image.
    public var imageWasTransformed = false
    /// The image is the kept rendition of the cached image from ``RenditionTables``: a view of mapped pixels,
    /// no decode.
    public var wasLoadedFromRenditionTable = false
}

/// Why a fetch failed (TIP's `TIPImageFetchErrorDomain` codes, same numbers).
public enum FetchErrorCode: Int, Sendable {
    case unknown = 0
    /// No URL, or an empty identifier.
    case invalidRequest = 1
    /// The server answered with an error status, or the transfer failed.
    case httpTransactionError = 2
    /// The bytes arrived but are not an image this pipeline can decode.
    case couldNotDecodeImage = 3
    /// The request's hydration changed its URL.
    case illegalModificationByHydration = 4
    /// There is no downloader.
    case couldNotDownloadImage = 5
    /// Every allowed source was tried (or none was allowed) and none had the image.
    case couldNotLoadImage = 6
    case cancelled = -1
    /// The delegate answered a preview with "stop".
    case cancelledAfterLoadingPreview = -2
}

/// A failed fetch: a stable ``code``, the HTTP status when there was one, and what caused it.
public struct FetchError: Error, Sendable, CustomStringConvertible {
    public var code: FetchErrorCode
    /// TIP's `httpStatusCode` user-info value, for ``FetchErrorCode/httpTransactionError``.
    public var httpStatusCode: Int?
    /// The underlying error: a ``DownloadError``, ``ImageDownloadError/truncatedImage``, an ``ImageCodecError``, or
    /// what a hydration threw.
    public var underlying: (any Error)?

    public init(_ code: FetchErrorCode, httpStatusCode: Int? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.httpStatusCode = httpStatusCode
        self.underlying = underlying
    }

    public var description: String {
        var text = "fetch failed (\(code), \(code.rawValue))"
        if let httpStatusCode { text += ", HTTP \(httpStatusCode)" }
        if let underlying { text += ": \(underlying)" }
        return text
    }

    /// The fetch error a failed network load means. (Labelled: an unlabelled overload made `FetchError(.cancelled)`
    /// ambiguous, and it resolved to this initialiser calling itself.)
    init(networkError error: ImageDownloadError) {
        switch error {
        case .cancelled: self.init(FetchErrorCode.cancelled)
        case .httpStatus(let status): self.init(FetchErrorCode.httpTransactionError, httpStatusCode: status)
        case .download(let error): self.init(FetchErrorCode.httpTransactionError, underlying: error)
        case .truncatedImage: self.init(FetchErrorCode.httpTransactionError, underlying: error)
        case .illegalHydrationModification: self.init(FetchErrorCode.illegalModificationByHydration)
        case .hydration(let error), .authorization(let error): self.init(FetchErrorCode.unknown, underlying: error)
        }
    }
}
