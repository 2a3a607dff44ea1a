import Foundation

/// What to put into a pipeline's caches (TIP's `TIPImageStoreRequest`).
public struct StoreRequest: Sendable {
    /// Where the image comes from.
    public enum Source: Sendable {
        /// A decoded image; it is encoded for the disk cache (PNG when it has alpha, else JPEG at TIP's quality).
        case image(ImageContainer)
        /// Encoded bytes, stored as they are.
        case data(Data)
        /// An encoded file, copied into the disk cache.
        case file(URL)
    }

    /// Options shared with fetch requests (TIP's store options).
    public struct Options: OptionSet, Hashable, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// The TTL counts from the store; reads do not extend it.
        public static let doNotResetExpiryOnAccess = Options(rawValue: 1)
        /// A stand-in image: never replaces a real one, never kept in the rendered cache.
        public static let treatAsPlaceholder = Options(rawValue: 2)
    }

    /// Rewrites a request before it runs (TIP's hydrater); throwing fails the store with that error.
    public typealias Hydration = @Sendable (StoreRequest, ImagePipeline) async throws -> StoreRequest

    public var url: URL
    /// Defaults to `url.absoluteString`.
    public var identifier: String?
    public var source: Source?
    /// Seconds the entry stays valid. Default 30 days.
    public var timeToLive: TimeInterval
    public var options: Options
    /// Dimensions of data or a file; detected from the bytes when `nil`.
    public var dimensions: PixelSize?
    public var hydration: Hydration?

    public init(
        url: URL, identifier: String? = nil, source: Source?, timeToLive: TimeInterval = 30 * 24 * 3600,
        options: Options = [], dimensions: PixelSize? = nil, hydration: Hydration? = nil
    ) {
        self.url = url
        self.identifier = identifier
        self.source = source
        self.timeToLive = timeToLive
        self.options = options
        self.dimensions = dimensions
        self.hydration = hydration
    }

    /// The identifier the caches use.
    public var resolvedIdentifier: String { identifier ?? url.absoluteString }
}

/// Why a store failed (TIP's `TIPImageStoreErrorDomain` codes).
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public enum Code: Int, Sendable {
        case unknown = 0
        case imageNotProvided = 1
        case imageURLNotProvided = 2
        case noCacheForStoring = 3
        case storageFailed = 4
    }

    public var code: Code
    /// What made it fail (an encoder error, a hydration error), when there is one.
    public var underlying: (any Error)?

    public init(_ code: Code, underlying: (any Error)? = nil) {
        self.code = code
        self.underlying = underlying
    }

    public var description: String {
        "store failed (\(code))" + (underlying.map { ": \($0)" } ?? "")
    }
}
