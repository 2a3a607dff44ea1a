/// Anything that shows one image: a cell of a grid, a view of a UI toolkit, a tile of a headless simulation
/// (TIP's `TIPImageFetchable`, without UIKit). Used on the delegate queue only, like a view on the main thread.
public protocol ImageDisplaying: AnyObject {
    /// What the view shows; the helper sets it.
    var displayedImage: ImageContainer? { get set }
    /// The view's size in pixels: the target size of its fetches.
    var displaySize: PixelSize { get }
    /// How an image is fitted into ``displaySize``.
    var displayContentMode: ContentMode { get }
}

extension ImageDisplaying {
    public var displayContentMode: ContentMode { .fill }
}

/// What the helper does when its view leaves the screen (TIP's `TIPImageViewDisappearanceBehavior`).
public enum DisappearanceBehavior: Int, Sendable {
    /// Nothing: the fetch goes on and the image stays.
    case none = 0
    /// The fetch is cancelled (a partial download is kept for resuming); the image stays.
    case cancelImageFetch = 1
    /// The fetch goes on at `Operation.QueuePriority.veryLow` until the view comes back.
    case lowerImageFetchPriority = 2
    /// The fetch is cancelled and the image dropped; it is loaded again when the view comes back. The default.
    case unload = 3
    /// The fetch is cancelled and the image replaced by a small copy (at most 180 px), shown as a placeholder
    /// until the view comes back and loads it again.
    case replaceWithPlaceholder = 4
}

/// Hears an ``ImageViewFetchHelper`` (TIP's `TIPImageViewFetchHelperDelegate`); every method has a default.
/// Called on the delegate queue.
public protocol ImageViewFetchHelperDelegate: AnyObject {
    /// Whether to go on loading after `preview` is shown; `defaultDecision` is the helper's own rule.
    func imageViewFetchHelper(_ helper: ImageViewFetchHelper, shouldContinueLoadingAfter preview: FetchResult,
                              defaultDecision: Bool) -> Bool
    func imageViewFetchHelperDidStartLoading(_ helper: ImageViewFetchHelper)
    /// The view now shows `result` (a preview, a scan, a first frame or the final image).
    func imageViewFetchHelper(_ helper: ImageViewFetchHelper, didShow result: FetchResult, isFinal: Bool)
    func imageViewFetchHelper(_ helper: ImageViewFetchHelper, didFailWith error: FetchError)
}

extension ImageViewFetchHelperDelegate {
    public func imageViewFetchHelper(_ helper: ImageViewFetchHelper, shouldContinueLoadingAfter preview: FetchResult,
                                     defaultDecision: Bool) -> Bool { defaultDecision }
    public func imageViewFetchHelperDidStartLoading(_ helper: ImageViewFetchHelper) {}
    public func imageViewFetchHelper(_ helper: ImageViewFetchHelper, didShow result: FetchResult, isFinal: Bool) {}
    public func imageViewFetchHelper(_ helper: ImageViewFetchHelper, didFailWith error: FetchError) {}
}
