import Foundation

/// How a pipeline decides whether a cached image may be used without asking the origin.
public enum CacheFreshnessPolicy: Sendable, Equatable {
    /// TIP's rule, the default: an image stays valid for its request's time to live after its last access
    /// (``FetchRequest/timeToLive``), whatever the server said; an expired image is gone and downloaded again.
    case timeToLive
    /// HTTP caching (RFC 9111) for the disk cache: an image is fresh for what its response said (`max-age`,
    /// else `Expires`, else a tenth of its age since `Last-Modified`, at most the time to live, else the time
    /// to live). A stale image with a validator (`ETag`, `Last-Modified`) is revalidated with a conditional
    /// request: a `304` keeps the bytes on disk and costs no body. `no-cache` revalidates on every use, and a
    /// `no-store` response is never written to disk. The time to live still bounds how long an unused entry
    /// is kept.
    case http
}

/// What a response said about caching its image, kept with the image on disk: its validators, its
/// `Cache-Control` and `Expires`, and when it was received, to work out the image's age (RFC 9111 §4.2.3).
public struct HTTPCacheMetadata: Sendable, Equatable {
    /// `ETag`, as sent (a weak tag included): sent back in `If-None-Match`.
    public var entityTag: String?
    /// `Last-Modified`, as sent: sent back in `If-Modified-Since`.
    public var lastModified: String?
    /// Every `Cache-Control` value, joined with commas; `nil` when there was none.
    public var cacheControl: String?
    /// `Expires`, as sent.
    public var expires: String?
    /// `Date`: when the origin generated the response; `nil` when absent or unreadable.
    public var date: Date?
    /// `Age`: seconds the response had spent in caches on its way; 0 when absent or unreadable.
    public var age: TimeInterval
    /// When the response (the image's `200`, or the latest `304` that confirmed it) arrived here.
    public var receivedAt: Date

    /// Metadata with every field given.
    public init(entityTag: String? = nil, lastModified: String? = nil, cacheControl: String? = nil, expires: String? = nil,
                date: Date? = nil, age: TimeInterval = 0, receivedAt: Date = Date()) {
        self.entityTag = entityTag
        self.lastModified = lastModified
        self.cacheControl = cacheControl
        self.expires = expires
        self.date = date
        self.age = age
        self.receivedAt = receivedAt
    }

    /// What the response head `headers`, received at `receivedAt`, says.
    public init(headers: DownloadHeaders, receivedAt: Date = Date()) {
        self.init(receivedAt: receivedAt)
        apply(headers)
    }

    /// The metadata after a `304` with `headers` confirmed the image at `receivedAt`: the fields the `304`
    /// carries replace the stored ones, the others stay (RFC 9111 §4.3.4).
    public func refreshed(by headers: DownloadHeaders, at receivedAt: Date = Date()) -> HTTPCacheMetadata {
        var refreshed = self
        refreshed.receivedAt = receivedAt
        // The age and date describe the response they came with: a 304 without them is a new, unaged answer.
        refreshed.date = nil
        refreshed.age = 0
        refreshed.apply(headers)
        return refreshed
    }

    private mutating func apply(_ headers: DownloadHeaders) {
        if let tag = headers["ETag"] { entityTag = tag }
        if let modified = headers["Last-Modified"] { lastModified = modified }
        let controls = headers.values(for: "Cache-Control")
        if !controls.isEmpty { cacheControl = controls.joined(separator: ", ") }
        if let expires = headers["Expires"] { self.expires = expires }
        if let date = headers["Date"].flatMap(HTTPDate.parse) { self.date = date }
        if let age = headers.integerValue(for: "Age") { self.age = TimeInterval(age) }
    }

    /// The parsed ``cacheControl``.
    public var directives: CacheControl { CacheControl(parsing: cacheControl.map { [$0] } ?? []) }

    /// Whether a conditional request can revalidate the image (it has an `ETag` or a `Last-Modified`).
    public var hasValidator: Bool { !(entityTag ?? "").isEmpty || !(lastModified ?? "").isEmpty }

    /// Seconds the response stays fresh: `max-age`; else `Expires` minus `Date` (an unreadable `Expires` is
    /// already stale); else, with `Last-Modified`, a tenth of the time between it and `Date` (RFC 9111
    /// §4.2.2's heuristic) at most `fallback`; else `fallback`.
    public func freshnessLifetime(fallback: TimeInterval) -> TimeInterval {
        if let maxAge = directives.maxAge { return TimeInterval(maxAge) }
        let generated = date ?? receivedAt
        if let expires {
            guard let expiry = HTTPDate.parse(expires) else { return 0 }
            return max(0, expiry.timeIntervalSince(generated))
        }
        if let modified = lastModified.flatMap(HTTPDate.parse) {
            return min(max(0, generated.timeIntervalSince(modified)) / 10, fallback)
        }
        return fallback
    }

    /// The response's age at `now`: what it had when it arrived (`Age`, or the gap between `Date` and its
    /// arrival, whichever is larger) plus the time since.
    public func currentAge(at now: Date) -> TimeInterval {
        let apparentAge = date.map { max(0, receivedAt.timeIntervalSince($0)) } ?? 0
        return max(apparentAge, age) + max(0, now.timeIntervalSince(receivedAt))
    }

    /// Whether the image may be used at `now` without asking the origin: never under `no-cache`; otherwise
    /// while its age is below its freshness lifetime (`fallback` as in ``freshnessLifetime(fallback:)``).
    public func isFresh(at now: Date, fallbackLifetime fallback: TimeInterval) -> Bool {
        let directives = directives
        if directives.noCache { return false }
        return currentAge(at: now) < freshnessLifetime(fallback: fallback)
    }
}
