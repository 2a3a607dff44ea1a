/// How much of an image has arrived when a progressive policy is asked (TIP's `TIPImageFetchProgress`).
public enum ProgressiveFrameProgress: Int, Sendable {
    case none = 0
    /// Part of a scan or pass: a render would show an incomplete frame.
    case partialFrame = 1
    /// A whole scan or pass has arrived.
    case fullFrame = 2
}

/// What a policy wants rendered now (TIP's `TIPImageFetchProgressUpdateBehavior`).
public enum ProgressiveUpdateBehavior: Int, Sendable {
    case none = 0
    /// Render whatever has arrived, an incomplete scan included.
    case updateWithAnyProgress = 1
    /// Render the last complete scan.
    case updateWithFullFrameProgress = 2
}

/// Decides, as the bytes of a progressive image arrive, when to show a scan (TIP's progressive loading
/// policy). Called on the fetch's queue for each chunk once the delegate agreed to progressive loading.
public protocol ProgressiveLoadingPolicy: Sendable {
    /// - Parameters:
    ///   - frameProgress: whether a whole scan just completed.
    ///   - frameCount: scans completed so far.
    ///   - progress: fraction of the image's bytes received.
    ///   - type: the image's format.
    ///   - dimensions: the image's size, from its headers.
    ///   - renderCount: scans already shown by this fetch.
    func behavior(frameProgress: ProgressiveFrameProgress, frameCount: Int, progress: Double, type: ImageType,
                  dimensions: PixelSize, renderCount: Int) -> ProgressiveUpdateBehavior
}

/// The first scan and the last: one low-quality look early, then the final image (TIP's
/// `TIPFirstAndLastFrameProgressiveLoadingPolicy`).
public struct FirstAndLastFrameProgressivePolicy: ProgressiveLoadingPolicy {
    /// Show the first scan even when it is the only one so far (a low-quality DC scan).
    public var shouldRenderLowQualityFrame: Bool

    public init(shouldRenderLowQualityFrame: Bool = true) { self.shouldRenderLowQualityFrame = shouldRenderLowQualityFrame }

    public func behavior(frameProgress: ProgressiveFrameProgress, frameCount: Int, progress: Double, type: ImageType,
                         dimensions: PixelSize, renderCount: Int) -> ProgressiveUpdateBehavior {
        guard frameProgress == .fullFrame else { return .none }
        if progress >= 1 { return .updateWithFullFrameProgress }
        if renderCount == 0, shouldRenderLowQualityFrame || frameCount >= 2 { return .updateWithFullFrameProgress }
        return .none
    }
}

/// Every complete scan (TIP's `TIPFullFrameProgressiveLoadingPolicy`, the default for JPEG).
public struct FullFrameProgressivePolicy: ProgressiveLoadingPolicy {
    /// Show the first scan; otherwise wait until 20% of the bytes are in.
    public var shouldRenderLowQualityFrame: Bool

    public init(shouldRenderLowQualityFrame: Bool = true) { self.shouldRenderLowQualityFrame = shouldRenderLowQualityFrame }

    public func behavior(frameProgress: ProgressiveFrameProgress, frameCount: Int, progress: Double, type: ImageType,
                         dimensions: PixelSize, renderCount: Int) -> ProgressiveUpdateBehavior {
        guard frameProgress == .fullFrame else { return .none }
        if frameCount > 1 { return .updateWithFullFrameProgress }
        if frameCount == 1, shouldRenderLowQualityFrame || progress >= 0.2 { return .updateWithFullFrameProgress }
        return .none
    }
}

/// Whatever has arrived, at every chunk past a minimum (TIP's `TIPGreedyProgressiveLoadingPolicy`).
public struct GreedyProgressivePolicy: ProgressiveLoadingPolicy {
    public var minimumProgress: Double

    public init(minimumProgress: Double = 0) { self.minimumProgress = minimumProgress }

    public func behavior(frameProgress: ProgressiveFrameProgress, frameCount: Int, progress: Double, type: ImageType,
                         dimensions: PixelSize, renderCount: Int) -> ProgressiveUpdateBehavior {
        progress > minimumProgress ? .updateWithAnyProgress : .none
    }
}

/// One look as soon as possible past a minimum, then the final image (TIP's
/// `TIPFirstAndLastOpportunityProgressiveLoadingPolicy`).
public struct FirstAndLastOpportunityProgressivePolicy: ProgressiveLoadingPolicy {
    public var minimumProgress: Double

    public init(minimumProgress: Double = 0) { self.minimumProgress = minimumProgress }

    public func behavior(frameProgress: ProgressiveFrameProgress, frameCount: Int, progress: Double, type: ImageType,
                         dimensions: PixelSize, renderCount: Int) -> ProgressiveUpdateBehavior {
        if progress >= 1 { return .updateWithFullFrameProgress }
        return renderCount == 0 && progress > minimumProgress ? .updateWithAnyProgress : .none
    }
}

/// Never renders a scan (TIP's `TIPDisabledProgressiveLoadingPolicy`).
public struct DisabledProgressivePolicy: ProgressiveLoadingPolicy {
    public init() {}

    public func behavior(frameProgress: ProgressiveFrameProgress, frameCount: Int, progress: Double, type: ImageType,
                         dimensions: PixelSize, renderCount: Int) -> ProgressiveUpdateBehavior { .none }
}

/// The policies used when a request names none: full frames for JPEG (TIP's default, the only format whose codec
/// decodes progressively in TIP) and for JPEG XL, whose complete passes render like JPEG's scans.
public enum ProgressiveLoadingDefaults {
    public static let policies: [ImageType: any ProgressiveLoadingPolicy] = [
        .jpeg: FullFrameProgressivePolicy(), .jxl: FullFrameProgressivePolicy(),
    ]
}
