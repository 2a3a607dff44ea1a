/// Changes a fetched image before it is shown: a blur, rounded corners, a tint (TIP's
/// `TIPImageFetchTransformer`). Runs on the fetch's queue, never the delegate queue; its result is then
/// scaled to the request's target.
///
/// The caches keep the untransformed bytes. A transformer with an ``identifier`` has its results kept in the
/// rendered cache under that identifier, so a repeat of the same request can complete synchronously; without
/// one, transformed images never enter the rendered cache and requests using it never read it synchronously.
public protocol ImageTransformer: Sendable {
    /// Names what the transformer does, for the rendered cache; `nil` keeps its results out of it.
    var identifier: String? { get }

    /// The transformed image, or `nil` to leave `image` as it is.
    /// - Parameters:
    ///   - image: the decoded image (a preview, a scan or the final image).
    ///   - progress: 1 for the final image, below 0 for a preview, otherwise a progressive scan's progress.
    ///   - targetSizing: what the image will be scaled to afterwards (a hint).
    func transform(_ image: ImageContainer, progress: Double, targetSizing: TargetSizing) -> ImageContainer?
}

extension ImageTransformer {
    public var identifier: String? { nil }
}
