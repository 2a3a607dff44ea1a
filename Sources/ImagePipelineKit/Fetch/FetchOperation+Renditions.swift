import Foundation

/// What the rendition tables had for a cached image.
enum RenditionTableAnswer {
    /// The final image: the fetch succeeded with it.
    case final
    /// An animation's first frame, shown while the animation decodes.
    case firstFrame
    case miss
}

// The rendition tables as a tier of a fetch: read before a cached image's bytes are decoded (written after
// delivery, a row of `FetchOperation+AfterDelivery.swift`). Every method runs on the operation's queue.
extension FetchOperation {
    /// Shows the rendition-table view of the cached image `info` describes at the target, without decoding: as
    /// the final image, or an animation's first frame. A final hit is not copied into the memory cache: its
    /// encoded bytes were never read.
    func _queue_showRendition(of info: CachedImageInfo, source: ImageLoadSource) -> RenditionTableAnswer {
        guard let key = plan.keys.renditionKey(of: info) else { return .miss }
        let transformed = plan.transformer != nil
        guard let bitmap = pipeline.caches.rendition(key) else {
            guard shared.withLock({ $0.progressiveResult == nil }), let first = pipeline.caches.rendition(key.firstFrame) else {
                return .miss
            }
            var frame = FetchResult(image: ImageContainer(bitmap: first), source: source, url: info.url,
                                    originalDimensions: info.dimensions, isPlaceholder: false, identifier: plan.identifier,
                                    imageWasTransformed: transformed)
            frame.wasLoadedFromRenditionTable = true
            shared.withLock { $0.progressiveResult = frame }
            metricsRecorder.hitProgressFrame()
            _queue_tellDelegate { [frame] in $0.fetchOperation(self, didLoadFirstAnimatedImageFrame: frame, progress: 1) }
            return .firstFrame
        }
        let image = ImageContainer(bitmap: bitmap)
        metricsRecorder.noteRenditionTableHit()
        _queue_keepRendered(image, from: info.url, sourceDimensions: info.dimensions, isPlaceholder: false,
                            transformed: transformed)
        var result = FetchResult(image: image, source: source, url: info.url, originalDimensions: info.dimensions,
                                 isPlaceholder: false, identifier: plan.identifier, imageWasTransformed: transformed)
        result.wasLoadedFromRenditionTable = true
        _queue_succeed(result)
        return .final
    }
}
