/// How an image is fitted into target dimensions (TIP's `UIViewContentMode` subset).
public enum ContentMode: String, Sendable, CaseIterable {
    /// Scale keeping the aspect ratio so the whole image fits inside the target (TIP's aspect fit).
    case fit
    /// Scale keeping the aspect ratio so the image covers the target (TIP's aspect fill).
    case fill
    /// Scale each axis to the target exactly, ignoring the aspect ratio (TIP's scale-to-fill).
    case stretch
    /// No scaling at all: the image keeps its own dimensions.
    case center
}

/// Target dimensions plus a content mode: what size a decoded image should end up.
///
/// The arithmetic follows TIP exactly (`TIPDimensionsScaledToTargetSizing`), including upscaling when the
/// target is larger than the source and the rounding TIP 2.24.3 fixed (`800×800` filled into `954×954`
/// gives `954×954`, not `953×954`).
public struct TargetSizing: Hashable, Sendable {
    /// The target, or `nil` for "keep the source dimensions".
    public var dimensions: PixelSize?
    public var contentMode: ContentMode

    public init(dimensions: PixelSize? = nil, contentMode: ContentMode = .fit) {
        self.dimensions = dimensions
        self.contentMode = contentMode
    }

    /// No target: decode at the image's own size.
    public static let original = TargetSizing()

    /// A positive target with a scaling content mode: what renditions (rendered cache, rendition tables) are
    /// made for. Untargeted and ``ContentMode/center`` sizings keep the source's size.
    var scalesToTarget: Bool {
        guard let dimensions, !dimensions.isEmpty else { return false }
        return contentMode != .center
    }

    /// The dimensions an image of `source` size ends up with under this sizing.
    ///
    /// A missing or non-positive target, or ``ContentMode/center``, leaves `source` unchanged.
    public func scaledSize(of source: PixelSize) -> PixelSize {
        guard let target = dimensions, !target.isEmpty, !source.isEmpty else { return source }
        switch contentMode {
        case .center:
            return source
        case .stretch:
            return target
        case .fit, .fill:
            let ratioX = Double(target.width) / Double(source.width)
            let ratioY = Double(target.height) / Double(source.height)
            let matchWidth = contentMode == .fit ? ratioX < ratioY : ratioX > ratioY
            if matchWidth {
                let height = (Double(target.width) * Double(source.height) / Double(source.width)).rounded()
                return PixelSize(width: target.width, height: max(1, Int(height)))
            } else {
                let width = (Double(target.height) * Double(source.width) / Double(source.height)).rounded()
                return PixelSize(width: max(1, Int(width)), height: target.height)
            }
        }
    }

    /// The dimensions each frame of an animation of `source` size ends up with: ``scaledSize(of:)``, but
    /// never larger than `source` on either axis.
    ///
    /// An animation keeps one bitmap per frame, so enlarging it multiplies its memory by the area ratio for
    /// every frame: a 30x60 GIF of 33 frames filled into a 390-pixel cell would hold 40 MB instead of 240 KB,
    /// and show no more detail. The view that shows it scales each frame as it draws. Stills are enlarged as
    /// TIP does.
    public func scaledSize(ofAnimation source: PixelSize) -> PixelSize {
        let scaled = scaledSize(of: source)
        return PixelSize(width: min(scaled.width, source.width), height: min(scaled.height, source.height))
    }

    /// ``scaledSize(ofAnimation:)`` for an animation, ``scaledSize(of:)`` for a still.
    public func scaledSize(of source: PixelSize, isAnimated: Bool) -> PixelSize {
        isAnimated ? scaledSize(ofAnimation: source) : scaledSize(of: source)
    }

    /// Whether an image of `size` already is what this sizing asks for (TIP's `tip_matchesTargetDimensions`).
    ///
    /// Rendered-cache lookups use this: an entry matches when scaling it would be a no-op.
    public func isSatisfied(by size: PixelSize) -> Bool {
        guard let target = dimensions, !target.isEmpty else { return true }
        if contentMode == .center { return size == target }
        return scaledSize(of: size) == size
    }
}
