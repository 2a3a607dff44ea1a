import Foundation

/// Loads images into an ``ImageDisplaying`` view and follows its life on screen (TIP's
/// `TIPImageViewFetchHelper`, without UIKit).
///
/// Give it a source (an image, a URL or a request): it fetches at the view's size and shows the preview, scans
/// and final image as they come; on the delegate queue a rendered-cache hit shows before ``load(_:)`` returns.
/// Tell it when the view disappears and reappears; it applies ``disappearanceBehavior``. When the pipeline
/// stores the image an on-screen view is waiting for (another fetch, a store), it reloads.
///
/// Use it on the delegate queue only (``GlobalConfiguration/delegateQueue``), as a view on the main thread.
public final class ImageViewFetchHelper: FetchDelegate, @unchecked Sendable {
    // @unchecked: every property is read and written on the delegate queue only (the fetch callbacks arrive
    // there too); `preconditionOnDelegateQueue` checks it in debug builds.

    /// What the helper loads.
    public enum Source: Sendable {
        /// An image already at hand: shown as is, nothing fetched.
        case image(ImageContainer)
        /// A URL, fetched at the view's size and content mode.
        case url(URL)
        /// A request as given (its own target sizing is kept when set).
        case request(any FetchRequest)
    }

    public let pipeline: ImagePipeline
    public private(set) weak var view: (any ImageDisplaying)?
    public weak var delegate: (any ImageViewFetchHelperDelegate)?
    /// What to do when the view disappears. Default ``DisappearanceBehavior/unload``.
    public var disappearanceBehavior = DisappearanceBehavior.unload
    /// Whether a fetch that has shown a progressive scan goes on at the `.veryLow` priority, so that on a
    /// shared link the views that show nothing yet come first: with the download coordinator's
    /// ``DownloadCoordinator/yieldsBackgroundDownloads``, its download is suspended while another view's runs,
    /// and continues where it stopped once none does. Off by default (TIP's helper keeps the priority).
    public var yieldsAfterFirstPixels = false

    /// The current source, if any.
    public private(set) var source: Source? {
        didSet { watchedIdentifier = request?.resolvedIdentifier }
    }
    /// The identifier the pipeline wakes this helper for when it is stored: the current request's.
    private var watchedIdentifier: String? {
        didSet { pipeline.storedImageWatchers.move(self, from: oldValue, to: watchedIdentifier) }
    }
    /// The fetch in progress, or the last one.
    public private(set) var operation: FetchOperation?
    /// Download progress of the current fetch.
    public private(set) var progress = 0.0
    /// What the view shows now, and where it came from.
    public private(set) var shownResult: FetchResult?
    /// The view shows a preview, not the requested image yet.
    public private(set) var isShowingPreview = false
    /// The view shows a placeholder (``DisappearanceBehavior/replaceWithPlaceholder``, or a placeholder image).
    public private(set) var isShowingPlaceholder = false
    /// The last fetch failed (a stop after a preview is not a failure).
    public private(set) var didFail = false
    /// Whether the view is on screen, as the helper was told.
    public private(set) var isVisible = true

    /// The longest side of a ``DisappearanceBehavior/replaceWithPlaceholder`` copy.
    public static let placeholderMaxSide = 180
    /// Posted to make every helper whose last fetch failed try again (``retryAllFailedLoads()``).
    public static let retryFailedLoadsNotification = Notification.Name("ImagePipelineKit.ImageViewFetchHelper.retry")

    private var observers: [any NSObjectProtocol] = []

    /// A helper loading into `view` through `pipeline`.
    public init(view: any ImageDisplaying, pipeline: ImagePipeline) {
        self.view = view
        self.pipeline = pipeline
        // Posted on the delegate queue (`retryAllFailedLoads`). Stores reach the helper through the pipeline's
        // `storedImageWatchers`, by identifier.
        observers.append(NotificationCenter.default.addObserver(forName: Self.retryFailedLoadsNotification, object: nil,
                                                                queue: nil) { [weak self] _ in
            guard let self, didFail, isVisible else { return }
            reload()
        })
    }

    deinit {
        observers.forEach(NotificationCenter.default.removeObserver)
        pipeline.storedImageWatchers.move(self, from: watchedIdentifier, to: nil)
        operation?.cancelAndDiscardDelegate()
    }

    /// Makes every helper whose last fetch failed try again (TIP's `notifyAllFetchHelpersToRetryFailedLoads`).
    /// Call it on the delegate queue, say when the network comes back.
    public static func retryAllFailedLoads() {
        NotificationCenter.default.post(name: retryFailedLoadsNotification, object: nil)
    }

    // MARK: - Loading

    /// Shows `source` in the view: cancels the current fetch, clears the view and starts loading; `nil` just
    /// clears. On a rendered-cache hit the image is shown before this returns.
    public func load(_ source: Source?) {
        preconditionOnDelegateQueue()
        cancelFetch()
        self.source = source
        show(nil, isFinal: false)
        didFail = false
        startFetch()
    }

    /// Loads the current source again (the view keeps what it shows until something better arrives).
    public func reload() {
        preconditionOnDelegateQueue()
        cancelFetch()
        didFail = false
        startFetch()
    }

    /// The request the current source fetches with, at the view's size.
    public var request: (any FetchRequest)? {
        switch source {
        case .url(let url):
            guard let view else { return GenericFetchRequest(url: url, targetSizing: .original) }
            return Self.request(for: url, displaySize: view.displaySize, contentMode: view.displayContentMode)
        case .request(let request): return request
        case .image, nil: return nil
        }
    }

    /// The request a helper makes for `url` in a view of `displaySize` and `contentMode`: give this to an
    /// ``ImagePrefetcher`` for a view not made yet, and the prefetch fills exactly what the view will ask for.
    public static func request(for url: URL, displaySize: PixelSize, contentMode: ContentMode = .fill) -> GenericFetchRequest {
        GenericFetchRequest(url: url, targetSizing: TargetSizing(dimensions: displaySize, contentMode: contentMode))
    }

    /// Whether a fetch is running.
    public var isLoading: Bool { operation.map { !$0.state.isFinished } ?? false }

    private func startFetch() {
        if case .image(let image) = source {
            view?.displayedImage = image
            return
        }
        guard let request else { return }
        progress = 0
        let operation = pipeline.operation(with: request, delegate: self)
        self.operation = operation
        if !isVisible, disappearanceBehavior == .lowerImageFetchPriority { operation.priority = .veryLow }
        delegate?.imageViewFetchHelperDidStartLoading(self)
        pipeline.fetchImage(with: operation)
    }

    private func cancelFetch() {
        operation?.cancelAndDiscardDelegate()
        operation = nil
    }

    private func show(_ result: FetchResult?, isFinal: Bool, isPreview: Bool = false, isPlaceholder: Bool = false) {
        shownResult = result
        isShowingPreview = isPreview
        isShowingPlaceholder = isPlaceholder || (result?.isPlaceholder ?? false)
        view?.displayedImage = result?.image
        if let result { delegate?.imageViewFetchHelper(self, didShow: result, isFinal: isFinal) }
    }

    // MARK: - Appearing and disappearing

    /// The view is about to leave the screen.
    public func viewWillDisappear() {}

    /// The view left the screen: applies ``disappearanceBehavior``.
    public func viewDidDisappear() {
        preconditionOnDelegateQueue()
        isVisible = false
        switch disappearanceBehavior {
        case .none:
            break
        case .cancelImageFetch:
            if isLoading { cancelFetch() }
        case .lowerImageFetchPriority:
            operation?.priority = .veryLow
        case .unload:
            cancelFetch()
            show(nil, isFinal: false)
        case .replaceWithPlaceholder:
            cancelFetch()
            if let shown = shownResult, let small = Self.placeholderCopy(of: shown.image) {
                var placeholder = shown
                placeholder.image = small
                show(placeholder, isFinal: false, isPlaceholder: true)
            } else {
                show(nil, isFinal: false)
            }
        }
    }

    /// The view is about to come on screen: loads again what a disappearance dropped or stopped.
    public func viewWillAppear() {
        preconditionOnDelegateQueue()
        isVisible = true
        switch disappearanceBehavior {
        case .lowerImageFetchPriority:
            if isLoading { operation?.priority = .normal }
        case .cancelImageFetch, .unload, .replaceWithPlaceholder:
            let needsImage = shownResult == nil || isShowingPlaceholder || isShowingPreview
            if needsImage, !isLoading, source != nil { reload() }
        case .none:
            break
        }
    }

    /// The view came on screen.
    public func viewDidAppear() {}

    /// A copy of `image` no larger than ``placeholderMaxSide`` on its longer side.
    static func placeholderCopy(of image: ImageContainer) -> ImageContainer? {
        let size = image.dimensions
        guard max(size.width, size.height) > placeholderMaxSide else { return ImageContainer(bitmap: image.bitmap) }
        let target = TargetSizing(dimensions: PixelSize(width: placeholderMaxSide, height: placeholderMaxSide), contentMode: .fit)
        return try? ImageContainer(bitmap: image.bitmap).scaled(for: target)
    }

    // MARK: - Stored images

    /// The pipeline stored an image with the identifier this helper watches (called by `announceStore`).
    func delegateQueue_imageWasStored(_ info: StoredImageInfo) {
        // An off-screen view loads nothing: `viewWillAppear` reloads what it needs when it comes back.
        guard !isLoading, isVisible, let request, info.identifier == request.resolvedIdentifier else { return }
        let viewIsEmpty = view?.displayedImage == nil
        let upgradesPlaceholder = isShowingPlaceholder && !info.isPlaceholder
        guard (viewIsEmpty && info.url == request.url) || upgradesPlaceholder else { return }
        pipeline.dirtyRenderedImage(identifier: info.identifier)
        reload()
    }

    // MARK: - FetchDelegate (on the delegate queue)

    /// Progress only: the helper has no use for the start or the sources tried, which then cost the delegate
    /// queue no turns.
    public var implementedCallbacks: FetchDelegateCallbacks { .progress }

    public func fetchOperation(_ operation: FetchOperation, didUpdateProgress progress: Double) {
        guard operation === self.operation else { return }
        self.progress = progress
    }

    public func fetchOperation(_ operation: FetchOperation, didLoadDirtyPreviewImage result: FetchResult) {
        guard operation === self.operation else { return }
        show(result, isFinal: false, isPreview: true)
    }

    public func fetchOperation(_ operation: FetchOperation, didLoadPreviewImage result: FetchResult,
                               completion: @escaping @Sendable (PreviewDecision) -> Void) {
        guard operation === self.operation else { return completion(.stopLoading) }
        show(result, isFinal: false, isPreview: true)
        let shouldContinue = delegate?.imageViewFetchHelper(self, shouldContinueLoadingAfter: result,
                                                           defaultDecision: defaultPreviewDecision(result))
            ?? defaultPreviewDecision(result)
        completion(shouldContinue ? .continueLoading : .stopLoading)
    }

    /// TIP's rule: go on after a placeholder preview; stop when the request is itself a placeholder, or when
    /// the preview is already at least as large as the view; otherwise go on.
    func defaultPreviewDecision(_ preview: FetchResult) -> Bool {
        if preview.isPlaceholder { return true }
        if request?.options.contains(.treatAsPlaceholder) == true { return false }
        if let size = view?.displaySize, preview.originalDimensions.width >= size.width,
           preview.originalDimensions.height >= size.height {
            return false
        }
        return true
    }

    public func fetchOperation(_ operation: FetchOperation, shouldLoadProgressivelyWithIdentifier identifier: String,
                               url: URL, imageType: ImageType, originalDimensions: PixelSize) -> Bool {
        true
    }

    public func fetchOperation(_ operation: FetchOperation, didUpdateProgressiveImage result: FetchResult, progress: Double) {
        guard operation === self.operation else { return }
        show(result, isFinal: false)
        if yieldsAfterFirstPixels, operation.priority != .veryLow { operation.priority = .veryLow }
    }

    public func fetchOperation(_ operation: FetchOperation, didLoadFirstAnimatedImageFrame result: FetchResult,
                               progress: Double) {
        guard operation === self.operation else { return }
        show(result, isFinal: false)
    }

    public func fetchOperation(_ operation: FetchOperation, didLoadFinalImage result: FetchResult) {
        guard operation === self.operation else { return }
        progress = 1
        show(result, isFinal: true)
    }

    public func fetchOperation(_ operation: FetchOperation, didFailToLoadFinalImageWith error: FetchError) {
        guard operation === self.operation else { return }
        // A stop after a preview is a success: the preview is what the view wanted (TIP's helper treats its
        // cancelled-after-loading-preview error the same way).
        if error.code == .cancelledAfterLoadingPreview {
            isShowingPreview = false
            return
        }
        if error.code != .cancelled { didFail = true }
        delegate?.imageViewFetchHelper(self, didFailWith: error)
    }

    private func preconditionOnDelegateQueue() {
        assert(pipeline.configuration.isOnDelegateQueue, "ImageViewFetchHelper is used on the delegate queue only")
    }
}
