import Foundation

/// What entered a pipeline's caches (TIP's `TIPImagePipelineDidStoreCachedImageNotification` user info).
public struct StoredImageInfo: Sendable {
    /// The pipeline that stored it.
    public var pipelineIdentifier: String
    /// The identifier the caches key it by.
    public var identifier: String
    public var url: URL
    /// Dimensions of the stored image (the file's, not a rendition's).
    public var dimensions: PixelSize
    public var isPlaceholder: Bool
    /// `true` for a ``StoreOperation``, `false` for an image a fetch downloaded.
    public var wasManuallyStored: Bool
    /// The decoded image, when the store had one (a store of data or a file has none).
    public var image: ImageContainer?

    /// The info carried by an ``ImagePipeline/didStoreCachedImageNotification``.
    public init?(notification: Notification) {
        guard let info = notification.userInfo?[Self.userInfoKey] as? StoredImageInfo else { return nil }
        self = info
    }

    init(pipelineIdentifier: String, identifier: String, url: URL, dimensions: PixelSize, isPlaceholder: Bool,
         wasManuallyStored: Bool, image: ImageContainer?) {
        self.pipelineIdentifier = pipelineIdentifier
        self.identifier = identifier
        self.url = url
        self.dimensions = dimensions
        self.isPlaceholder = isPlaceholder
        self.wasManuallyStored = wasManuallyStored
        self.image = image
    }

    static let userInfoKey = "storedImageInfo"
}

/// Hears what pipelines do (TIP's `TIPImagePipelineObserver`). Every method has an empty default.
///
/// Register one for every pipeline with ``GlobalConfiguration/addObserver(_:)`` (held weakly), or for one
/// pipeline with ``ImagePipeline/observer``. Called on the queue of the work being reported, never on the
/// delegate queue, and not serialised with one another: keep them quick and thread-safe.
public protocol ImagePipelineObserver: AnyObject, Sendable {
    /// An image entered `pipeline`'s caches, from a store operation or a download.
    func imagePipeline(_ pipeline: ImagePipeline, didStore image: StoredImageInfo)
    /// A download for `pipeline` started.
    func imagePipeline(_ pipeline: ImagePipeline, didStartDownloadingImageAt url: URL)
    /// A download for `pipeline` delivered a complete image of `sizeInBytes` bytes.
    func imagePipeline(
        _ pipeline: ImagePipeline, didFinishDownloadingImageAt url: URL, imageType: ImageType?, sizeInBytes: Int,
        dimensions: PixelSize, wasResumed: Bool)
}

extension ImagePipelineObserver {
    public func imagePipeline(_ pipeline: ImagePipeline, didStore image: StoredImageInfo) {}
    public func imagePipeline(_ pipeline: ImagePipeline, didStartDownloadingImageAt url: URL) {}
    public func imagePipeline(
        _ pipeline: ImagePipeline, didFinishDownloadingImageAt url: URL, imageType: ImageType?, sizeInBytes: Int,
        dimensions: PixelSize, wasResumed: Bool) {}
}

extension ImagePipeline {
    /// Posted on the delegate queue when an image entered a pipeline's caches; `object` is the pipeline, and
    /// ``StoredImageInfo/init(notification:)`` reads the details.
    public static let didStoreCachedImageNotification = Notification.Name("ImagePipelineKit.didStoreCachedImage")

    /// The global observers and this pipeline's own, snapshotted now (TIP snapshots them at an operation's start).
    var currentObservers: [any ImagePipelineObserver] {
        configuration.observers + (observer.map { [$0] } ?? [])
    }

    /// Tells the observers (on this thread); on the delegate queue, in a turn of its own, posts
    /// ``didStoreCachedImageNotification`` and wakes the fetch helpers showing that image.
    func announceStore(_ info: StoredImageInfo) {
        let post = storeAnnouncement(info)
        configuration.delegateQueue.async { DelegateQueueDiagnostics.delegateTurn(post) }
    }

    /// Tells the observers (on this thread) and returns the rest of the announcement, for the caller to run
    /// on the delegate queue: the notification and the fetch helpers (a fetch runs it in its own next turn).
    func storeAnnouncement(_ info: StoredImageInfo) -> @Sendable () -> Void {
        for observer in currentObservers { observer.imagePipeline(self, didStore: info) }
        return { [self] in
            NotificationCenter.default.post(
                name: Self.didStoreCachedImageNotification, object: self, userInfo: [StoredImageInfo.userInfoKey: info])
            for helper in storedImageWatchers.helpers(watching: info.identifier) {
                helper.delegateQueue_imageWasStored(info)
            }
        }
    }
}
