import Foundation

extension ImagePipeline {
    /// A cache of encoded images shared by every process of a fleet (``SharedImageCache``), or `nil` (the
    /// default): fetches try it after the disk caches and before the additional caches and the network; an image
    /// found there is decoded as a disk hit would be and kept in this pipeline's memory and disk caches; an image
    /// downloaded is written through to it once its final callback is handed to the delegate, and so is a stored image; clearing an
    /// identifier deletes it there too. While one process downloads an image, the others wait for it (up to twice
    /// ``SharedCacheConfiguration/leaseTimeToLive``) instead of asking the origin too.
    ///
    /// The shared cache never fails a fetch: an error or a timeout is a miss, reported as
    /// ``ImagePipelineProblem/sharedCacheUnavailable(reason:)`` when an outage begins.
    public var sharedCache: SharedCacheConfiguration? {
        get { caches.sharedCache?.configuration }
        set { caches.useSharedCache(newValue.map { SharedCacheAccess($0, pipeline: identifier, global: configuration) }) }
    }
}
