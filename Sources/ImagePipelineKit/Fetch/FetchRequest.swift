import Foundation

/// Where a fetch found its image (TIP's `TIPImageLoadSource`).
public enum ImageLoadSource: Int, Sendable, CaseIterable {
    case unknown = 0
    /// The rendered or the memory cache.
    case memoryCache = 1
    /// This pipeline's disk cache, or another live pipeline's (copied into this one).
    case diskCache = 2
    case additionalCache = 3
    case network = 4
    /// The network, continuing a partial image from the caches.
    case networkResumed = 5
    /// This pipeline's disk cache, after the origin confirmed with a `304 Not Modified` that the stale image is
    /// still current (``CacheFreshnessPolicy/http``): a round trip, no body.
    case diskRevalidated = 6
    /// The fleet-shared cache (``ImagePipeline/sharedCache``), tried after the disk caches.
    case sharedCache = 7
}

extension ImageLoadSource: CustomStringConvertible {
    /// A short name for output and metrics: `memory`, `disk`, `shared`, `additional`, `network`, `networkResumed`,
    /// `diskRevalidated`.
    public var description: String {
        switch self {
        case .unknown: "unknown"
        case .memoryCache: "memory"
        case .diskCache: "disk"
        case .additionalCache: "additional"
        case .network: "network"
        case .networkResumed: "networkResumed"
        case .diskRevalidated: "diskRevalidated"
        case .sharedCache: "shared"
        }
    }
}

/// Which sources a fetch may use (TIP's `TIPImageFetchLoadingSources`).
public struct LoadingSources: OptionSet, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let memoryCache = LoadingSources(rawValue: 1 << 1)
    public static let diskCache = LoadingSources(rawValue: 1 << 2)
    public static let additionalCache = LoadingSources(rawValue: 1 << 3)
    public static let network = LoadingSources(rawValue: 1 << 4)
    /// Only continuing a partial image; a full download is refused.
    public static let networkResumed = LoadingSources(rawValue: 1 << 5)
    /// The fleet-shared cache (``ImagePipeline/sharedCache``), when the pipeline has one.
    public static let sharedCache = LoadingSources(rawValue: 1 << 6)
    public static let all = LoadingSources(rawValue: 0xFF)
}

/// Fetch options (TIP's `TIPImageFetchOptions`; the values match ``StoreRequest/Options``).
public struct FetchOptions: OptionSet, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// The TTL counts from the store; reads do not extend it.
    public static let doNotResetExpiryOnAccess = FetchOptions(rawValue: 1 << 0)
    /// The image is a stand-in: it never replaces a real one and never enters the rendered cache.
    public static let treatAsPlaceholder = FetchOptions(rawValue: 1 << 1)
    /// Do not keep the rendered result in the rendered cache.
    public static let skipStoringToRenderedCache = FetchOptions(rawValue: 1 << 2)
}

/// What to fetch (TIP's `TIPImageFetchRequest`). Only ``url`` is required; every other requirement has
/// TIP's default in an extension. ``GenericFetchRequest`` is a ready value type.
public protocol FetchRequest: Sendable {
    var url: URL { get }
    /// The caches' key; `nil` uses `url.absoluteString`. Different sizes of one image share an identifier.
    var identifier: String? { get }
    /// The size and content mode the image should end up at; ``TargetSizing/original`` keeps its own size.
    var targetSizing: TargetSizing { get }
    /// Seconds the cached image stays valid; ≤ 0 means the default, 30 days.
    var timeToLive: TimeInterval { get }
    var options: FetchOptions { get }
    var loadingSources: LoadingSources { get }
    /// Rewrites the download request (add headers, sign it); must not change the URL.
    var hydration: ImageDownloadRequest.Hydration? { get }
    /// The value of the `Authorization` header.
    var authorization: ImageDownloadRequest.Authorization? { get }
    /// Names ``hydration`` and ``authorization`` so that fetches using the same ones can share a download
    /// (closures have no identity). `nil` with either present: never shared.
    var hydrationKey: String? { get }
    /// Decoding limits and options.
    var decoderConfiguration: DecoderConfiguration { get }
    /// When to show scans of a progressive image, per type; `nil` uses ``ProgressiveLoadingDefaults/policies``.
    /// Scans are shown only when the delegate also agrees, in
    /// ``FetchDelegate/fetchOperation(_:shouldLoadProgressivelyWithIdentifier:url:imageType:originalDimensions:)``.
    var progressiveLoadingPolicies: [ImageType: any ProgressiveLoadingPolicy]? { get }
    /// Applied to every image the fetch delivers (previews, scans, the final image) before scaling; the caches keep
    /// the untransformed bytes.
    var transformer: (any ImageTransformer)? { get }
}

extension FetchRequest {
    public var identifier: String? { nil }
    public var targetSizing: TargetSizing { .original }
    public var timeToLive: TimeInterval { FetchDefaults.timeToLive }
    public var options: FetchOptions { [] }
    public var loadingSources: LoadingSources { .all }
    public var hydration: ImageDownloadRequest.Hydration? { nil }
    public var authorization: ImageDownloadRequest.Authorization? { nil }
    public var hydrationKey: String? { nil }
    public var decoderConfiguration: DecoderConfiguration { .default }
    public var progressiveLoadingPolicies: [ImageType: any ProgressiveLoadingPolicy]? { nil }
    public var transformer: (any ImageTransformer)? { nil }

    /// The identifier the caches use: ``identifier``, else the URL's absolute string.
    public var resolvedIdentifier: String { identifier ?? url.absoluteString }
    /// ``timeToLive``, with TIP's default for values ≤ 0.
    var resolvedTimeToLive: TimeInterval { timeToLive > 0 ? timeToLive : FetchDefaults.timeToLive }
}

enum FetchDefaults {
    /// TIP's `TIPTimeToLiveDefault`: 30 days.
    static let timeToLive: TimeInterval = 30 * 24 * 3600
}

/// A ready-made ``FetchRequest`` (TIP's `TIPGenericImageFetchRequest`), a value type.
public struct GenericFetchRequest: FetchRequest {
    public var url: URL
    public var identifier: String?
    public var targetSizing: TargetSizing
    public var timeToLive: TimeInterval
    public var options: FetchOptions
    public var loadingSources: LoadingSources
    public var hydration: ImageDownloadRequest.Hydration?
    public var authorization: ImageDownloadRequest.Authorization?
    public var hydrationKey: String?
    public var decoderConfiguration: DecoderConfiguration
    public var progressiveLoadingPolicies: [ImageType: any ProgressiveLoadingPolicy]?
    public var transformer: (any ImageTransformer)?

    public init(
        url: URL, identifier: String? = nil, targetSizing: TargetSizing = .original,
        timeToLive: TimeInterval = 30 * 24 * 3600, options: FetchOptions = [], loadingSources: LoadingSources = .all,
        hydration: ImageDownloadRequest.Hydration? = nil, authorization: ImageDownloadRequest.Authorization? = nil,
        hydrationKey: String? = nil, decoderConfiguration: DecoderConfiguration = .default,
        progressiveLoadingPolicies: [ImageType: any ProgressiveLoadingPolicy]? = nil,
        transformer: (any ImageTransformer)? = nil
    ) {
        self.transformer = transformer
        self.progressiveLoadingPolicies = progressiveLoadingPolicies
        self.url = url
        self.identifier = identifier
        self.targetSizing = targetSizing
        self.timeToLive = timeToLive
        self.options = options
        self.loadingSources = loadingSources
        self.hydration = hydration
        self.authorization = authorization
        self.hydrationKey = hydrationKey
        self.decoderConfiguration = decoderConfiguration
    }
}
