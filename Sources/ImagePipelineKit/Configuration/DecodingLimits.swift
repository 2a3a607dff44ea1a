/// Ceilings a decoder checks before it allocates, so hostile or absurd files fail fast with
/// ``ImageCodecError/limitExceeded(_:)`` instead of exhausting memory (decompression bombs).
///
/// The checks use the dimensions a file *declares* in its header, before any pixel buffer exists.
public struct DecodingLimits: Hashable, Sendable {
    /// Most pixels in the source image (width × height as declared). Default 64 Mpx.
    public var maxPixels: Int
    /// Longest side, in pixels, of the source image. Default 32,768.
    public var maxDimension: Int
    /// Most frames decoded from an animation. Default 1,000.
    public var maxFrames: Int
    /// Most bytes of decoded pixels for one image, all frames together (and libjpeg's working memory).
    /// Default 256 MiB.
    public var maxBytes: Int

    public init(
        maxPixels: Int = 64_000_000,
        maxDimension: Int = 32_768,
        maxFrames: Int = 1_000,
        maxBytes: Int = 256 << 20
    ) {
        self.maxPixels = maxPixels
        self.maxDimension = maxDimension
        self.maxFrames = maxFrames
        self.maxBytes = maxBytes
    }

    /// The defaults above.
    public static let `default` = DecodingLimits()

    /// Throws unless a source of `size` may be decoded.
    public func check(sourceSize size: PixelSize) throws(ImageCodecError) {
        if size.isEmpty { throw .corrupt("image declares empty dimensions \(size)") }
        if size.width > maxDimension || size.height > maxDimension { throw .limitExceeded(.dimension(size)) }
        if size.area > maxPixels { throw .limitExceeded(.pixels(size)) }
    }

    /// Throws unless `frameCount` frames of `size` fit in ``maxFrames`` and ``maxBytes``. Decoders call it
    /// right before allocating those frames; when the decode runs for a fetch, the bytes are also claimed from
    /// the configuration's budget for decodes in flight, waiting for room
    /// (``GlobalConfiguration/maxBytesForDecodesInFlight``).
    public func check(frameCount: Int, of size: PixelSize) throws(ImageCodecError) {
        if frameCount > maxFrames { throw .limitExceeded(.frames(frameCount)) }
        let perFrame = Bitmap.alignedBytesPerRow(forWidth: size.width).multipliedReportingOverflow(by: size.height)
        let total = perFrame.partialValue.multipliedReportingOverflow(by: frameCount)
        if perFrame.overflow || total.overflow || total.partialValue > maxBytes {
            throw .limitExceeded(.bytes(perFrame.overflow || total.overflow ? Int.max : total.partialValue))
        }
        try claimDecodeMemory(total.partialValue)
    }

    /// Claims `bytes` in all for the decode running here from the configuration's budget for decodes in
    /// flight, waiting for room (``GlobalConfiguration/maxBytesForDecodesInFlight``); does nothing outside a
    /// fetch's decode. ``check(frameCount:of:)`` claims the frames' pixels; a decoder that needs more working
    /// memory (libjpeg's coefficients of a multi-scan image) claims the larger total.
    public func claimDecodeMemory(_ bytes: Int) throws(ImageCodecError) {
        try DecodeMemoryBudget.Claim.current?.grow(to: bytes)
    }
}

/// Options that steer a decode (TIP's decoder config dictionary, typed).
public struct DecoderConfiguration: Hashable, Sendable {
    /// Allocation ceilings checked before any large buffer exists.
    public var limits: DecodingLimits
    /// Rotate/flip the pixels upright according to EXIF orientation. Default `true`.
    public var appliesOrientation: Bool
    /// Decode every frame of an animation; `false` decodes only the first. Default `true`.
    public var decodesAnimation: Bool
    /// The sizing renders of an incremental session will most likely ask for, when known up front (a fetch
    /// knows its target). Decoders that can shrink while decoding use it: JPEG decodes at the largest DCT
    /// reduction that still covers it, which skips most of the work for thumbnails. A later render that asks
    /// for more than this upscales what was decoded. `nil` (the default) decodes at full size.
    public var preferredSizing: TargetSizing?

    public init(
        limits: DecodingLimits = .default, appliesOrientation: Bool = true, decodesAnimation: Bool = true,
        preferredSizing: TargetSizing? = nil
    ) {
        self.limits = limits
        self.appliesOrientation = appliesOrientation
        self.decodesAnimation = decodesAnimation
        self.preferredSizing = preferredSizing
    }

    public static let `default` = DecoderConfiguration()
}
