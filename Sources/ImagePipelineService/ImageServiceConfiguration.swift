import Foundation

/// What an ``ImageService`` accepts and how it answers.
public struct ImageServiceConfiguration: Sendable {
    /// thumbor security keys: the first signs (``URLSigner``), every one verifies, so a key can be rotated by
    /// adding the new one first and dropping the old one later.
    public var securityKeys: [String] = []
    /// Whether `/unsafe/…` paths are rendered (thumbor's `ALLOW_UNSAFE_URL`). Off: they get a 403.
    public var allowsUnsafeURLs = false
    /// Which sources may be fetched.
    public var sourcePolicy = SourcePolicy()
    public var limits = ServiceLimits()
    /// The quality of JPEG and WebP outputs without a `quality()` filter (thumbor's default is 80).
    public var defaultQuality = 80
    /// The quality of AVIF outputs without a `quality()` filter: libavif's default. On libavif's scale a number
    /// spends more bytes than on JPEG's or WebP's; at 80 a photo's thumbnail was larger than the WebP at 80.
    public var defaultAVIFQuality = 60
    /// The `max-age` of `Cache-Control` on images, in seconds.
    public var cacheMaxAge = 86_400
    /// How long a rendered answer stays in the result cache after its last use.
    public var resultTimeToLive: TimeInterval = 7 * 86_400

    public init() {}
}
