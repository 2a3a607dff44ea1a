import Foundation

/// A fetch's request resolved once, when its operation is made (TIP reads its request into the operation the
/// same way): the identifier, URL and time to live, a validated target, the sources and options, the
/// transformer and every key derived from them (``FetchKeys``). A ``FetchRequest`` is a protocol whose
/// properties may be computed; nothing in the fetch reads it again after this.
struct FetchPlan: Sendable {
    let url: URL
    /// The caches' key: the request's identifier, else the URL's absolute string.
    let identifier: String
    /// Seconds a cached image stays valid (the request's, or the 30-day default for values ≤ 0).
    let timeToLive: TimeInterval
    /// The request's target; a target with a negative side is dropped (the image keeps its own size) and
    /// reported once as ``ImagePipelineProblem/invalidTargetDimensions(identifier:dimensions:)``.
    let target: TargetSizing
    /// The negative target dimensions the request asked for, to report when the fetch starts.
    let invalidTargetDimensions: PixelSize?
    let sources: LoadingSources
    let options: FetchOptions
    let transformer: (any ImageTransformer)?
    let decoderConfiguration: DecoderConfiguration
    /// When to show scans of progressive images, by type (the request's, else the library's defaults).
    let progressiveLoadingPolicies: [ImageType: any ProgressiveLoadingPolicy]
    let keys: FetchKeys
    private let hydration: ImageDownloadRequest.Hydration?
    private let authorization: ImageDownloadRequest.Authorization?
    private let hydrationKey: String?

    init(_ request: any FetchRequest) {
        url = request.url
        identifier = request.resolvedIdentifier
        timeToLive = request.resolvedTimeToLive
        let requested = request.targetSizing
        if let dimensions = requested.dimensions, dimensions.width < 0 || dimensions.height < 0 {
            invalidTargetDimensions = dimensions
            target = TargetSizing(dimensions: nil, contentMode: requested.contentMode)
        } else {
            invalidTargetDimensions = nil
            target = requested
        }
        sources = request.loadingSources
        options = request.options
        transformer = request.transformer
        decoderConfiguration = request.decoderConfiguration
        progressiveLoadingPolicies = request.progressiveLoadingPolicies ?? ProgressiveLoadingDefaults.policies
        hydration = request.hydration
        authorization = request.authorization
        hydrationKey = request.hydrationKey
        keys = FetchKeys(identifier: identifier, target: target, sources: sources, options: options,
                         transformer: transformer, decoderConfiguration: decoderConfiguration)
    }

    /// The fetch delivers a stand-in: never kept as a real image, never resumed, never in the rendered cache.
    var isPlaceholder: Bool { options.contains(.treatAsPlaceholder) }

    /// Whether reading a cached image extends its time to live.
    var updatesExpiryOnAccess: Bool { !options.contains(.doNotResetExpiryOnAccess) }

    /// Whether a partial image from the caches may be continued from the network.
    var mayResume: Bool { (sources.contains(.networkResumed) || sources.contains(.network)) && !isPlaceholder }

    /// The coordinator's request for this fetch's image, continuing `partial` when there is one.
    /// A stale cached image's metadata in `revalidating` makes it a conditional request.
    func downloadRequest(pipelineIdentifier: String, partial: PartialImageData?, revalidating: HTTPCacheMetadata?,
                         headers: DownloadHeaders, limits: DownloadLimits) -> ImageDownloadRequest {
        ImageDownloadRequest(url: url, identifier: identifier, pipelineIdentifier: pipelineIdentifier, headers: headers,
                             limits: limits, hydration: hydration, authorization: authorization, hydrationKey: hydrationKey,
                             partial: partial, revalidating: revalidating)
    }

    /// Downloaded or copied bytes as this fetch files them in the caches.
    func cachedImage(_ data: Data, dimensions: PixelSize, isAnimated: Bool, httpMetadata: HTTPCacheMetadata? = nil) -> CachedImageData {
        CachedImageData(data: data, url: url, dimensions: dimensions, isPlaceholder: isPlaceholder, isAnimated: isAnimated,
                        timeToLive: timeToLive, updatesExpiryOnAccess: updatesExpiryOnAccess, httpMetadata: httpMetadata)
    }
}
