import ImagePipelineKit

/// The sizes a thumbnail goes through, worked out from the request and the source's size: a pure value, so
/// the rules are in one place and tested without pixels.
///
/// thumbor's rules: a side of `0` follows the other by the aspect ratio (both `0`: the source's size); `orig`
/// is the source's length; without `fit-in` the image is scaled to cover the box and cut to it; with `fit-in`
/// it is scaled to fit inside, and `fill(color)` pads it to the box. Scaling up is allowed unless
/// `no_upscale()` is given, which keeps the source's size (and cuts the box down to it).
public struct ThumbnailGeometry: Equatable, Sendable {
    /// What the (cropped) source is scaled to.
    public var scaled: PixelSize
    /// The rectangle the scaled image is cut to, when it covers a box.
    public var cropBox: PixelSize?
    /// The canvas the scaled image is centred on, for `fit-in` with `fill(color)`.
    public var paddedBox: PixelSize?

    /// The target the pipeline can decode for before the source's size is known: a fetch with it lets the JPEG
    /// decoder skip most of the work with its DCT scaling. `.original` where the size depends on the source
    /// (a source crop, `orig`).
    public static func fetchSizing(for request: ThumbnailRequest) -> TargetSizing {
        guard request.sourceCrop == nil else { return .original }
        let unbounded = 1 << 20
        switch (request.width, request.height) {
        case (.pixels(let width), .pixels(let height)):
            return TargetSizing(dimensions: PixelSize(width: width, height: height), contentMode: request.fitsIn ? .fit : .fill)
        case (.pixels(let width), .proportional):
            return TargetSizing(dimensions: PixelSize(width: width, height: unbounded), contentMode: .fit)
        case (.proportional, .pixels(let height)):
            return TargetSizing(dimensions: PixelSize(width: unbounded, height: height), contentMode: .fit)
        default:
            return .original
        }
    }

    public init(scaled: PixelSize, cropBox: PixelSize? = nil, paddedBox: PixelSize? = nil) {
        self.scaled = scaled
        self.cropBox = cropBox
        self.paddedBox = paddedBox
    }

    /// The geometry of `request` for a source of `source` pixels (after its source crop).
    public init(request: ThumbnailRequest, source: PixelSize) {
        func length(_ side: ThumbnailRequest.Side, original: Int) -> Int? {
            switch side {
            case .proportional: nil
            case .original: original
            case .pixels(let pixels): pixels
            }
        }
        let width = length(request.width, original: source.width)
        let height = length(request.height, original: source.height)
        let upscaleAllowed = !request.filters.preventsUpscaling
        switch (width, height) {
        case (nil, nil):
            self.init(scaled: source)
        case (let width?, nil):
            self.init(scaled: Self.capped(TargetSizing(dimensions: PixelSize(width: width, height: 1 << 20), contentMode: .fit)
                .scaledSize(of: source), source: source, upscaleAllowed: upscaleAllowed))
        case (nil, let height?):
            self.init(scaled: Self.capped(TargetSizing(dimensions: PixelSize(width: 1 << 20, height: height), contentMode: .fit)
                .scaledSize(of: source), source: source, upscaleAllowed: upscaleAllowed))
        case (let width?, let height?):
            let box = PixelSize(width: width, height: height)
            let mode: ContentMode = request.fitsIn ? .fit : .fill
            let scaled = Self.capped(TargetSizing(dimensions: box, contentMode: mode).scaledSize(of: source),
                                     source: source, upscaleAllowed: upscaleAllowed)
            if request.fitsIn {
                self.init(scaled: scaled, paddedBox: request.filters.fill == nil ? nil : box)
            } else {
                let cut = PixelSize(width: min(box.width, scaled.width), height: min(box.height, scaled.height))
                self.init(scaled: scaled, cropBox: cut == scaled ? nil : cut)
            }
        }
    }

    /// `size`, or the source's own size when `size` would enlarge it and upscaling is off.
    private static func capped(_ size: PixelSize, source: PixelSize, upscaleAllowed: Bool) -> PixelSize {
        upscaleAllowed || (size.width <= source.width && size.height <= source.height) ? size : source
    }

    /// The size of the image the service sends.
    public var output: PixelSize { paddedBox ?? cropBox ?? scaled }
}
