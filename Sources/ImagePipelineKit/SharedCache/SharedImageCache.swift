import Foundation

/// A cache of encoded image bytes shared by many processes (a fleet of servers), tried after a pipeline's own
/// disk cache and before its additional caches and the network. Set one with
/// ``ImagePipeline/sharedCache``; `ImagePipelineRedis` has one on Redis.
///
/// Unlike ``AdditionalImageCache``, a shared cache holds the complete *encoded* bytes with their metadata, is
/// written through by the fetch that downloaded an image, and hands out *fill leases* so that one process of
/// the fleet downloads an image while the others wait for it.
///
/// Every method may be called from any thread, concurrently. A method should give up within its own
/// timeout; the pipeline also bounds each call by ``SharedCacheConfiguration/operationTimeout`` and treats
/// an error or a timeout as a miss (a fetch never fails because of the shared cache).
public protocol SharedImageCache: Sendable {
    /// The value stored under `key`: ``SharedCacheLookup/hit(_:)``, a miss, or a value that failed a check and
    /// was deleted (``SharedCacheLookup/rejected(reason:)``).
    /// - Parameter key: the value's key (``SharedCacheKey``).
    /// - Throws: any error when the cache cannot be asked (unreachable, timed out); the fetch treats it as a miss.
    func value(for key: SharedCacheKey) async throws -> SharedCacheLookup

    /// Stores `value` under `key`, replacing what was there; it expires after ``SharedCacheValue/timeToLive``.
    /// - Parameters:
    ///   - value: the complete encoded image and its metadata.
    ///   - key: the key to store it under.
    /// - Throws: any error when the value was not stored (too large, unreachable).
    func store(_ value: SharedCacheValue, for key: SharedCacheKey) async throws

    /// Takes the fill lease of `key` for `ttl`: the holder downloads the image and stores it; others wait.
    /// - Parameters:
    ///   - key: the value's key the lease is for.
    ///   - ttl: how long the lease lasts unless released; a holder that dies frees it after this.
    /// - Returns: the lease, or `nil` when another holder has it.
    /// - Throws: any error when the cache cannot be asked.
    func acquireLease(for key: SharedCacheKey, ttl: Duration) async throws -> SharedCacheLease?

    /// Gives `lease` back, when it is still the holder's (a lease that expired and was taken by another holder
    /// is left alone).
    /// - Parameter lease: a lease from ``acquireLease(for:ttl:)``.
    /// - Throws: any error when the cache cannot be asked.
    func releaseLease(_ lease: SharedCacheLease) async throws

    /// Deletes the value stored under `key` (clearing an identifier clears it fleet-wide).
    /// - Parameter key: the value's key.
    /// - Throws: any error when the cache cannot be asked.
    func removeValue(for key: SharedCacheKey) async throws
}

/// The name of a value in a shared cache: a namespace, a format version, the pipeline's identifier and a hash
/// of the image identifier (identifiers are often long URLs, and may hold characters a cache's keys should not).
/// Made by the pipeline; two pipelines of the same identifier and namespace, in any process, share values.
public struct SharedCacheKey: Hashable, Sendable, CustomStringConvertible {
    /// The key as the cache stores it, such as `ipk:v1:avatars:3f8a…`.
    public let rawValue: String

    /// A key spelled by hand (tests, tools); fetches make theirs from the pipeline and the identifier.
    /// - Parameter rawValue: the key as the cache stores it.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The key of `identifier` in the pipeline `pipeline` under `namespace`.
    /// - Parameters:
    ///   - namespace: separates fleets (or deployments) sharing one cache.
    ///   - pipeline: the pipeline's identifier.
    ///   - identifier: the image identifier (``FetchRequest/resolvedIdentifier``).
    public init(namespace: String, pipeline: String, identifier: String) {
        rawValue = "\(namespace):v\(Self.formatVersion):\(pipeline):\(SHA1.hexDigest(of: Array(identifier.utf8)))"
    }

    /// Bumped when what a key names changes, so that older processes' values are never read as newer ones.
    public static let formatVersion = 1

    /// The raw value.
    public var description: String { rawValue }
}

/// An image as a shared cache holds it: the complete encoded bytes and what a fetch needs to file them.
public struct SharedCacheValue: Sendable, Equatable {
    /// The encoded image (JPEG, PNG, …), exactly as downloaded.
    public var data: Data
    /// Where the image was downloaded from; a fetch of another URL under the same identifier misses.
    public var url: URL
    /// The image's own pixel size.
    public var dimensions: PixelSize
    /// The media type of ``data``, such as `image/jpeg`, when known.
    public var contentType: String?
    /// Whether the image has several frames.
    public var isAnimated: Bool
    /// The origin's `ETag`, when it sent one.
    public var eTag: String?
    /// The origin's `Last-Modified`, when it sent one.
    public var lastModified: String?
    /// Seconds the value stays in the shared cache (the request's time to live).
    public var timeToLive: TimeInterval

    /// A value to store.
    /// - Parameters:
    ///   - data: the encoded image.
    ///   - url: where it came from.
    ///   - dimensions: its pixel size.
    ///   - contentType: its media type, when known.
    ///   - isAnimated: whether it has several frames.
    ///   - eTag: the origin's `ETag`.
    ///   - lastModified: the origin's `Last-Modified`.
    ///   - timeToLive: seconds it stays in the shared cache.
    public init(data: Data, url: URL, dimensions: PixelSize, contentType: String? = nil, isAnimated: Bool = false,
                eTag: String? = nil, lastModified: String? = nil, timeToLive: TimeInterval) {
        self.data = data
        self.url = url
        self.dimensions = dimensions
        self.contentType = contentType
        self.isAnimated = isAnimated
        self.eTag = eTag
        self.lastModified = lastModified
        self.timeToLive = timeToLive
    }
}

/// What asking a shared cache for a value came to.
public enum SharedCacheLookup: Sendable, Equatable {
    /// The value, checked.
    case hit(SharedCacheValue)
    /// Nothing under the key.
    case miss
    /// A value was there but failed a check (corrupt, truncated, unsigned, signed by another fleet, stored
    /// under another key); it was deleted and is not served. The fetch reports
    /// ``ImagePipelineProblem/sharedCacheValueRejected(identifier:reason:)`` and goes on as on a miss.
    case rejected(reason: String)
}

/// A fill lease held on a key: proof that this holder, and no other, is downloading the value.
public struct SharedCacheLease: Sendable, Hashable {
    /// The key of the value the lease is for.
    public let key: SharedCacheKey
    /// The holder's random token; only the holder's release frees the lease.
    public let token: String

    /// A lease as a cache hands it out.
    /// - Parameters:
    ///   - key: the value's key.
    ///   - token: the holder's random token.
    public init(key: SharedCacheKey, token: String) {
        self.key = key
        self.token = token
    }
}
