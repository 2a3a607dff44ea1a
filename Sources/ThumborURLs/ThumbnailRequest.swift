import ImagePipelineKit

/// One thumbnail, as a thumbor URL asks for it: which part of which source, at what size, in what format.
///
/// A value: ``ThumborPath/parse(_:)`` makes it from a path, ``canonicalDescription`` names it for the result
/// cache, and ``ThumbnailRenderer`` renders it.
public struct ThumbnailRequest: Hashable, Sendable {
    /// One side of the requested size.
    public enum Side: Hashable, Sendable {
        /// `0` or nothing: follow the other side by the source's aspect ratio (both unset: the source's size).
        case proportional
        /// `orig`: the source's own length on this side.
        case original
        /// A length in pixels.
        case pixels(Int)
    }

    /// Which columns a crop keeps (thumbor's `left`, `center`, `right`).
    public enum HorizontalAlignment: String, Hashable, Sendable { case left, center, right }
    /// Which rows a crop keeps (thumbor's `top`, `middle`, `bottom`).
    public enum VerticalAlignment: String, Hashable, Sendable { case top, middle, bottom }

    /// A rectangle of the source in its own pixels (thumbor's `AxB:CxD`), cut before anything else.
    public struct SourceCrop: Hashable, Sendable {
        public var left: Int
        public var top: Int
        public var right: Int
        public var bottom: Int

        public init(left: Int, top: Int, right: Int, bottom: Int) {
            (self.left, self.top, self.right, self.bottom) = (left, top, right, bottom)
        }
    }

    /// The rectangle of the source to start from, or `nil` for all of it.
    public var sourceCrop: SourceCrop?
    /// `fit-in`: the whole image fits inside the box; otherwise it covers the box and is cut to it.
    public var fitsIn = false
    public var width: Side = .proportional
    public var height: Side = .proportional
    /// A `-` before the width.
    public var flipsHorizontally = false
    /// A `-` before the height.
    public var flipsVertically = false
    public var horizontalAlignment: HorizontalAlignment = .center
    public var verticalAlignment: VerticalAlignment = .middle
    /// `smart/`: the crop keeps the region of highest detail instead of the alignment's (see ``DetailCrop``).
    public var isSmart = false
    public var filters = ThumbnailFilters()
    /// The source URL, percent-decoded, with `http://` added when it had no scheme.
    public var source: String

    public init(source: String) {
        self.source = source
    }

    /// Every option in a fixed order, as the result cache's key and the `ETag` see them: two requests with the
    /// same description render the same bytes.
    public var canonicalDescription: String {
        var parts: [String] = []
        if let crop = sourceCrop { parts.append("crop=\(crop.left),\(crop.top),\(crop.right),\(crop.bottom)") }
        parts.append(fitsIn ? "fit-in" : "fill")
        parts.append("size=\(Self.describe(width))x\(Self.describe(height))")
        if flipsHorizontally || flipsVertically { parts.append("flip=\(flipsHorizontally ? "h" : "")\(flipsVertically ? "v" : "")") }
        parts.append(isSmart ? "smart" : "align=\(horizontalAlignment.rawValue),\(verticalAlignment.rawValue)")
        parts.append(filters.canonicalDescription)
        parts.append(source)
        return parts.joined(separator: "|")
    }

    private static func describe(_ side: Side) -> String {
        switch side {
        case .proportional: "0"
        case .original: "orig"
        case .pixels(let pixels): String(pixels)
        }
    }
}

/// The `filters:` part of a thumbor URL that this service supports.
public struct ThumbnailFilters: Hashable, Sendable {
    /// `format(jpeg|png|webp|avif)`; `nil` negotiates by `Accept`.
    public var format: OutputFormat?
    /// `quality(0...100)`; `nil` is the service's default.
    public var quality: Int?
    /// `no_upscale()`: never enlarge the source.
    public var preventsUpscaling = false
    /// `fill(color)`: with `fit-in`, the box is filled to its full size with this colour around the image;
    /// also the background that transparent pixels get in a JPEG.
    public var fill: RGBA?
    /// `max_bytes(n)`: the quality is lowered until the output fits (never below 10).
    public var maxBytes: Int?

    public init() {}

    public var canonicalDescription: String {
        var parts: [String] = []
        if let format { parts.append("format=\(format.rawValue)") }
        if let quality { parts.append("q=\(quality)") }
        if preventsUpscaling { parts.append("no-upscale") }
        if let fill { parts.append("fill=\(fill.r),\(fill.g),\(fill.b),\(fill.a)") }
        if let maxBytes { parts.append("max-bytes=\(maxBytes)") }
        return parts.joined(separator: ",")
    }
}
