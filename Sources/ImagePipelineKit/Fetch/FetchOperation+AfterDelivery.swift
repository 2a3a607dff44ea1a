import Foundation

/// One thing a fetch does once it handed the final image to its delegate, on the fetch's queue and before the
/// operation reports finished: work that must not delay the image, but that is done once the operation is.
///
/// The steps that find or download an image say which of these follow it; ``FetchOperation`` runs them in the
/// order given, each as one row of `_queue_runAfterDelivery`.
enum AfterDeliveryStep: Sendable {
    /// Newly fetched bytes go to the disk cache (`writes`), or the disk forgets the identifier's image (a
    /// response that forbade storing it replaced it). A store that memory did not take is announced once the
    /// bytes are on disk (`announcement`).
    case writeToDisk(CachedImageData, replacesSameURL: Bool, writes: Bool, announcement: StoredImageInfo?)
    /// Identical fetches stop getting the bytes of the download this fetch owned from the coordinator: from
    /// now on the caches have them.
    case releaseDownload(DownloadAttachment)
    /// The final image goes into the rendition tables (an animation's first frame only).
    case keepRendition(ImageContainer, RenditionKey)
    /// The downloaded bytes go to the fleet's shared cache, and the fill lease, if this fetch holds it, is given
    /// back once they are there.
    case writeThrough(CachedImageData, type: ImageType?, lease: SharedCacheLease?)
}

extension FetchOperation {
    /// The step, run after delivery, that keeps a final image decoded from the cached or downloaded
    /// image `source` in the rendition tables (an animation's first frame only); `nil`, so that the fetch takes
    /// no extra step, when there is nothing to keep: no tables, a placeholder, a request whose renditions are
    /// never kept, or a transformer that left the image as it was (the key would claim it transformed).
    func _queue_renditionStep(_ image: ImageContainer, of source: CachedImageInfo, transformed: Bool) -> AfterDeliveryStep? {
        guard pipeline.caches.keepsRenditionTables, transformed == (plan.transformer != nil),
              let key = plan.keys.renditionKey(of: source) else { return nil }
        return .keepRendition(image, key)
    }

    /// Runs the steps that follow the delivery of the final image, in order.
    func _queue_runAfterDelivery(_ steps: [AfterDeliveryStep]) {
        for step in steps {
            switch step {
            case .writeToDisk(let cached, let replacesSameURL, let writes, let announcement):
                let caches = pipeline.caches
                let onDisk = measuring(.diskWrite) {
                    writes
                        ? pipeline.configuration.timingDiskCache(.write) {
                            caches.writeDownloadedToDisk(cached, identifier: plan.identifier, replacesSameURL: replacesSameURL)
                        }
                        : caches.forgetOnDisk(identifier: plan.identifier, url: plan.url)
                }
                if onDisk, let announcement { pipeline.announceStore(announcement) }
            case .releaseDownload(let attachment):
                attachment.resultStored()
            case .keepRendition(let image, let key):
                pipeline.configuration.measuring(.renditionStore) {
                    pipeline.caches.keepRendition(image.bitmap, key: image.isAnimated ? key.firstFrame : key)
                }
            case .writeThrough(let cached, let type, let lease):
                pipeline.caches.writeThroughToFleet(cached, identifier: plan.identifier, type: type, releasing: lease)
            }
        }
    }
}
