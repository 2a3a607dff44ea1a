import Foundation

/// A read-only source of images by URL, tried after the disk caches (TIP's `TIPImageAdditionalCache`).
/// Nothing is ever written to it, and what it returns is not stored in the memory or disk caches.
public protocol AdditionalImageCache: Sendable {
    /// The image for `url`, or `nil`. Called off the delegate queue.
    func image(for url: URL) async -> ImageContainer?
}
