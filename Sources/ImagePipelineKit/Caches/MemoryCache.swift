import Foundation

/// The encoded bytes of a complete image as the memory and disk caches keep them, with TIP's metadata.
public struct CachedImageData: Sendable, Equatable {
    public var data: Data
    public var url: URL
    public var dimensions: PixelSize
    public var isPlaceholder: Bool
    public var isAnimated: Bool
    /// Seconds the entry stays valid after its last access (or after storing, see ``updatesExpiryOnAccess``).
    public var timeToLive: TimeInterval
    /// `false` for TIP's `DoNotResetExpiryOnAccess`: the TTL counts from the store, and reads do not refresh it.
    public var updatesExpiryOnAccess: Bool
    public var lastAccess: Date
    /// What the response that brought the image said about caching it (validators, `Cache-Control`,
    /// `Expires`); `nil` for an image stored by hand or cached before the metadata was kept. Read under
    /// ``CacheFreshnessPolicy/http``.
    public var httpMetadata: HTTPCacheMetadata?

    public init(
        data: Data, url: URL, dimensions: PixelSize, isPlaceholder: Bool = false, isAnimated: Bool = false,
        timeToLive: TimeInterval = 30 * 24 * 3600, updatesExpiryOnAccess: Bool = true, lastAccess: Date = Date(),
        httpMetadata: HTTPCacheMetadata? = nil
    ) {
        self.data = data
        self.url = url
        self.dimensions = dimensions
        self.isPlaceholder = isPlaceholder
        self.isAnimated = isAnimated
        self.timeToLive = timeToLive
        self.updatesExpiryOnAccess = updatesExpiryOnAccess
        self.lastAccess = lastAccess
        self.httpMetadata = httpMetadata
    }

    func isExpired(at now: Date) -> Bool { now.timeIntervalSince(lastAccess) > timeToLive }
}

/// The first bytes of an image whose download stopped, kept so the next fetch can resume it.
public struct PartialImageData: Sendable, Equatable {
    public var data: Data
    public var url: URL
    /// Dimensions when the headers had arrived, else `nil`.
    public var dimensions: PixelSize?
    /// The full length the server announced.
    public var expectedByteCount: Int
    /// Validators for `If-Range`.
    public var lastModified: String?
    public var entityTag: String?
    public var timeToLive: TimeInterval
    public var updatesExpiryOnAccess: Bool
    public var lastAccess: Date

    public init(
        data: Data, url: URL, dimensions: PixelSize?, expectedByteCount: Int, lastModified: String? = nil,
        entityTag: String? = nil, timeToLive: TimeInterval = 30 * 24 * 3600, updatesExpiryOnAccess: Bool = true,
        lastAccess: Date = Date()
    ) {
        self.data = data
        self.url = url
        self.dimensions = dimensions
        self.expectedByteCount = expectedByteCount
        self.lastModified = lastModified
        self.entityTag = entityTag
        self.timeToLive = timeToLive
        self.updatesExpiryOnAccess = updatesExpiryOnAccess
        self.lastAccess = lastAccess
    }

    func isExpired(at now: Date) -> Bool { now.timeIntervalSince(lastAccess) > timeToLive }
}

/// What the memory or disk cache holds for one identifier: a complete image's bytes, a partial download, or both.
public struct CacheEntry: CacheCosting {
    public var complete: CachedImageData?
    public var partial: PartialImageData?

    public init(complete: CachedImageData? = nil, partial: PartialImageData? = nil) {
        self.complete = complete
        self.partial = partial
    }

    /// Bytes charged: the complete image's data plus the partial's.
    public var cost: Int { (complete?.data.count ?? 0) + (partial?.data.count ?? 0) }
    /// Pattern matches, not `== nil`: that went through `Equatable` and copied both images (retains) on every
    /// memory-cache hit (seen in a profile of `bench cache`).
    var isEmpty: Bool {
        if case .some = complete { return false }
        if case .some = partial { return false }
        return true
    }
}

/// Encoded image bytes of one pipeline, in memory (TIP's memory cache).
///
/// Never decoded images (those live in the ``RenderedCache``): what is kept here decodes at any target.
/// Replacement follows TIP: a placeholder never replaces a real image, a real image always replaces a
/// placeholder, otherwise a larger (or equal, but different) image wins; a complete image at least as large as
/// the partial evicts the partial. TTLs are checked on read. Thread-safe; every pipeline's memory cache shares
/// the global memory limits (``GlobalConfiguration``).
public final class MemoryCache: Sendable {
    private let owner: CachePool<CacheEntry>.Owner
    private let pool: CachePool<CacheEntry>

    init(owner: String, pool: CachePool<CacheEntry>) {
        self.owner = pool.register(name: owner)
        self.pool = pool
    }

    deinit {
        pool.unregister(owner)
    }

    /// The unexpired parts of the entry for `identifier`; expired parts are dropped, and the access
    /// refreshes the TTL of parts that update expiry on access.
    public func entry(for identifier: String, now: Date = Date()) -> CacheEntry? {
        let result = pool.access(owner: owner, key: identifier) { (entry: inout CacheEntry) -> CacheEntry? in
            if entry.complete?.isExpired(at: now) == true { entry.complete = nil }
            if entry.partial?.isExpired(at: now) == true { entry.partial = nil }
            if entry.isEmpty { return nil }
            if entry.complete?.updatesExpiryOnAccess == true { entry.complete?.lastAccess = now }
            if entry.partial?.updatesExpiryOnAccess == true { entry.partial?.lastAccess = now }
            return entry
        }
        if result == nil {   // absent, or every part expired: drop the empty shell
            pool.update(owner: owner, key: identifier) { current in current?.isEmpty == false ? current : nil }
        }
        return result
    }

    /// Stores complete image bytes under TIP's replacement rules; `forced` (a store operation of a real image)
    /// replaces whatever is there, and `replacesSameURL` (a download under ``CacheFreshnessPolicy/http``, the
    /// image's current version) replaces an image of the same URL whatever its size. Returns whether the bytes
    /// are now cached.
    @discardableResult
    public func storeComplete(_ image: CachedImageData, identifier: String, forced: Bool = false,
                              replacesSameURL: Bool = false) -> Bool {
        let maxEntryBytes = pool.limits.maxEntryBytes
        let result = pool.update(owner: owner, key: identifier) { current in
            var entry = forced ? CacheEntry(partial: current?.partial) : (current ?? CacheEntry())
            if let existing = entry.complete, !Self.completeShouldReplace(existing, with: image, replacesSameURL: replacesSameURL) {
                return current
            }
            entry.complete = image
            if let partial = entry.partial, let dimensions = partial.dimensions, image.dimensions.area >= dimensions.area {
                entry.partial = nil
            }
            return Self.trimmed(entry, maxEntryBytes: maxEntryBytes)
        }
        return result.stored && pool.entry(owner: owner, key: identifier, touch: false)?.complete == image
    }

    /// Stores a partial download unless it is a placeholder, smaller than the partial already kept, or no
    /// larger than the complete image already kept.
    @discardableResult
    public func storePartial(_ partial: PartialImageData, identifier: String, isPlaceholder: Bool = false) -> Bool {
        guard !isPlaceholder else { return false }
        let maxEntryBytes = pool.limits.maxEntryBytes
        let area = partial.dimensions?.area ?? 0
        let result = pool.update(owner: owner, key: identifier) { current in
            var entry = current ?? CacheEntry()
            if let old = entry.partial, (old.dimensions?.area ?? 0) > area { return current }
            if let complete = entry.complete, complete.dimensions.area >= area, complete.url == partial.url { return current }
            entry.partial = partial
            return Self.trimmed(entry, maxEntryBytes: maxEntryBytes)
        }
        return result.stored && pool.entry(owner: owner, key: identifier, touch: false)?.partial == partial
    }

    /// Drops the partial download of `identifier` (after it completed, or the server said it changed).
    public func removePartial(identifier: String) {
        pool.update(owner: owner, key: identifier) { current in
            guard var entry = current else { return nil }
            entry.partial = nil
            return entry.isEmpty ? nil : entry
        }
    }

    public func clear(identifier: String) {
        pool.remove(owner: owner, key: identifier)
    }

    public func clearAll() {
        pool.removeAll(owner: owner)
    }

    /// Identifiers and entries, most recently used first (for inspection).
    public var entries: [(identifier: String, entry: CacheEntry)] {
        pool.entries(owner: owner).map { ($0.key, $0.entry) }
    }

    public var totalBytes: Int { pool.bytes(owner: owner) }

    // MARK: - TIP's rules

    /// TIP's replacement rule: placeholders never replace real images; real images always replace placeholders;
    /// otherwise the new image must be at least as large and not the same (dimensions and URL).
    /// With `replacesSameURL`, a real image of the same URL always replaces.
    static func completeShouldReplace(_ existing: CachedImageData, with new: CachedImageData,
                                      replacesSameURL: Bool = false) -> Bool {
        if new.isPlaceholder != existing.isPlaceholder { return existing.isPlaceholder }
        if replacesSameURL, new.url == existing.url { return true }
        if new.dimensions == existing.dimensions && new.url == existing.url { return false }
        return new.dimensions.area >= existing.dimensions.area
    }

    /// An entry over the per-entry cap loses its partial first, then its complete image.
    static func trimmed(_ entry: CacheEntry, maxEntryBytes: Int) -> CacheEntry? {
        var entry = entry
        if entry.cost > maxEntryBytes { entry.partial = nil }
        if entry.cost > maxEntryBytes { entry.complete = nil }
        return entry.isEmpty ? nil : entry
    }
}
