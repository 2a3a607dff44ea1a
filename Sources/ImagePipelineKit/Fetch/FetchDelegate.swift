import Foundation

/// Hears one fetch (TIP's `TIPImageFetchDelegate`). Every method has an empty default.
///
/// Called on ``GlobalConfiguration/delegateQueue`` (the main queue unless changed), in TIP's order:
/// `didStart`, then `willAttemptToLoadFrom` before each source tried, progress, and exactly one of
/// `didLoadFinalImage` / `didFailToLoadFinalImage` — always before the operation reports finished. A fetch
/// holds its delegate weakly: releasing the delegate cancels the fetch.
///
/// A delegate that has only some of the callbacks says which in ``implementedCallbacks``: the fetch then
/// sends it no others, as TIP calls only the delegate methods an object implements.
public protocol FetchDelegate: AnyObject, Sendable {
    /// The optional callbacks this delegate has (the default: all of them), read once when the operation is
    /// made. The fetch does not send the others to the delegate queue at all: a delegate that only wants the
    /// final image (the block API's) costs the delegate queue one turn per fetch, not one for the start, each
    /// source tried and the progress too.
    var implementedCallbacks: FetchDelegateCallbacks { get }
    func fetchOperationDidStart(_ operation: FetchOperation)
    /// Before trying `source` (memory, disk, additional caches, network or network-resumed).
    func fetchOperation(_ operation: FetchOperation, willAttemptToLoadFrom source: ImageLoadSource)
    /// A stale rendition from the rendered cache (marked dirty), delivered synchronously inside
    /// ``ImagePipeline/fetchImage(with:)`` when it is called on the delegate queue; the fetch then goes on
    /// to load a fresh image.
    func fetchOperation(_ operation: FetchOperation, didLoadDirtyPreviewImage result: FetchResult)
    /// A cached complete image of the same identifier but another URL, at the request's target, from the
    /// memory or disk cache only: offered at most once per fetch. Call `completion` (from any thread, now or
    /// later) with ``PreviewDecision/continueLoading`` to go on to the requested URL, or
    /// ``PreviewDecision/stopLoading`` to end the fetch with ``FetchErrorCode/cancelledAfterLoadingPreview``.
    /// The default continues.
    func fetchOperation(_ operation: FetchOperation, didLoadPreviewImage result: FetchResult,
                        completion: @escaping @Sendable (PreviewDecision) -> Void)
    /// Whether to show the scans of a progressive image as they arrive. Asked once per fetch, after the
    /// headers of a progressive image came in and when a policy exists for its type. Called **synchronously on
    /// the fetch's queue**, not the delegate queue: answer from what you hold. The default says no.
    func fetchOperation(_ operation: FetchOperation, shouldLoadProgressivelyWithIdentifier identifier: String, url: URL,
                        imageType: ImageType, originalDimensions: PixelSize) -> Bool
    /// A scan of a progressive image, at the request's target, as the policy allowed.
    func fetchOperation(_ operation: FetchOperation, didUpdateProgressiveImage result: FetchResult, progress: Double)
    /// The first frame of an animated image, once, while the rest downloads.
    func fetchOperation(_ operation: FetchOperation, didLoadFirstAnimatedImageFrame result: FetchResult, progress: Double)
    /// Download progress, 0 ... 0.999 (never 1: the final callback says that).
    func fetchOperation(_ operation: FetchOperation, didUpdateProgress progress: Double)
    func fetchOperation(_ operation: FetchOperation, didLoadFinalImage result: FetchResult)
    func fetchOperation(_ operation: FetchOperation, didFailToLoadFinalImageWith error: FetchError)
}

extension FetchDelegate {
    public var implementedCallbacks: FetchDelegateCallbacks { .all }
    public func fetchOperationDidStart(_ operation: FetchOperation) {}
    public func fetchOperation(_ operation: FetchOperation, willAttemptToLoadFrom source: ImageLoadSource) {}
    public func fetchOperation(_ operation: FetchOperation, didLoadDirtyPreviewImage result: FetchResult) {}
    public func fetchOperation(_ operation: FetchOperation, shouldLoadProgressivelyWithIdentifier identifier: String,
                               url: URL, imageType: ImageType, originalDimensions: PixelSize) -> Bool { false }
    public func fetchOperation(_ operation: FetchOperation, didUpdateProgressiveImage result: FetchResult,
                               progress: Double) {}
    public func fetchOperation(_ operation: FetchOperation, didLoadFirstAnimatedImageFrame result: FetchResult,
                               progress: Double) {}
    public func fetchOperation(_ operation: FetchOperation, didLoadPreviewImage result: FetchResult,
                               completion: @escaping @Sendable (PreviewDecision) -> Void) {
        completion(.continueLoading)
    }
    public func fetchOperation(_ operation: FetchOperation, didUpdateProgress progress: Double) {}
    public func fetchOperation(_ operation: FetchOperation, didLoadFinalImage result: FetchResult) {}
    public func fetchOperation(_ operation: FetchOperation, didFailToLoadFinalImageWith error: FetchError) {}
}

/// The callbacks of a ``FetchDelegate`` that it may leave out (the final image or error always comes).
public struct FetchDelegateCallbacks: OptionSet, Sendable {
    public let rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }

    /// ``FetchDelegate/fetchOperationDidStart(_:)``.
    public static let start = FetchDelegateCallbacks(rawValue: 1 << 0)
    /// ``FetchDelegate/fetchOperation(_:willAttemptToLoadFrom:)``.
    public static let sourceAttempts = FetchDelegateCallbacks(rawValue: 1 << 1)
    /// ``FetchDelegate/fetchOperation(_:didUpdateProgress:)``.
    public static let progress = FetchDelegateCallbacks(rawValue: 1 << 2)
    /// Every callback.
    public static let all: FetchDelegateCallbacks = [.start, .sourceAttempts, .progress]
}

/// What a delegate wants after a preview (TIP's `TIPImageFetchPreviewLoadedBehavior`).
public enum PreviewDecision: Int, Sendable {
    /// Go on loading the requested image.
    case continueLoading = 0
    /// The preview is enough: end the fetch (state failed, ``FetchErrorCode/cancelledAfterLoadingPreview``).
    case stopLoading = 1
}

/// The block API's delegate: one completion, held strongly by its operation until it finished.
final class CompletionFetchDelegate: FetchDelegate {
    var implementedCallbacks: FetchDelegateCallbacks { [] }
    private let completion: @Sendable (Result<FetchResult, FetchError>) -> Void

    init(_ completion: @escaping @Sendable (Result<FetchResult, FetchError>) -> Void) {
        self.completion = completion
    }

    func fetchOperation(_ operation: FetchOperation, didLoadFinalImage result: FetchResult) {
        completion(.success(result))
    }

    func fetchOperation(_ operation: FetchOperation, didFailToLoadFinalImageWith error: FetchError) {
        completion(.failure(error))
    }
}
