import CAVIF
import CCodecsOnDemand
import Foundation

/// One AVIF being decoded as its bytes arrive, over libavif's decoder reading an ``AVIFByteSource``.
///
/// The container is parsed once its boxes are in; the declared size and frame count are checked against the
/// limits before libavif decodes (and allocates) anything. Each frame is decoded as soon as its samples are
/// here and converted at once to premultiplied RGBA (libavif's YUV planes are reused for the next frame).
/// Renders before the end show the first frame. Not thread-safe: one queue at a time.
final class AVIFDecodingSession: ImageDecodingSession, RemembersDecodingFailure {
    private let configuration: DecoderConfiguration
    private let source: AVIFByteSource
    private let decoder: UnsafeMutablePointer<avifDecoder>?
    private var isParsed = false
    /// The size the container declares (before orientation), which the limits were checked against.
    private var storedSize = PixelSize(width: 0, height: 0)
    /// Frames wanted: all of an animation, or just the first.
    private var framesWanted = 1
    /// Frames as stored (not yet turned upright), with their durations.
    private var frames: [ImageFrame] = []
    private var isComplete = false
    /// The orientation the renders stand upright (``ImageOrientation/up`` when the configuration says not to).
    private var appliedOrientation = ImageOrientation.up
    var failure: ImageCodecError?
    private(set) var properties: ImageProperties?

    init(configuration: DecoderConfiguration, expectedByteCount: Int?) {
        self.configuration = configuration
        // The hint bounds what libavif believes a box may claim. The expected count alone would turn a cut
        // download into a parse failure before any frame; the byte limit is the bound a file has anyway.
        source = AVIFByteSource(sizeHint: max(expectedByteCount ?? 0, configuration.limits.maxBytes))
        if let unavailable = ipk_avif_load() {
            decoder = nil
            failure = .unsupported("AVIF: \(String(cString: unavailable))")
            return
        }
        decoder = ipk_avifDecoderCreate()
        guard let decoder else {
            failure = .limitExceeded(.bytes(MemoryLayout<avifDecoder>.size))
            return
        }
        decoder.pointee.maxThreads = 1
        decoder.pointee.ignoreXMP = 1
        // libavif's own ceilings are as loose as it allows while parsing (no dimension limit, its largest pixel
        // count) so that an oversized image reaches our check of the declared size, a typed limit error;
        // they are tightened to ours before anything is decoded.
        decoder.pointee.imageDimensionLimit = 0
        decoder.pointee.imageSizeLimit = UInt32(AVIF_DEFAULT_IMAGE_SIZE_LIMIT)
        ipk_avifDecoderSetIO(decoder, source.io)
    }

    deinit {
        if let decoder { ipk_avifDecoderDestroy(decoder) }
    }

    func append(_ data: Data) throws -> DecoderProgress {
        if let failure { throw failure }
        if isComplete { return .didCompleteLoading }
        try guarded { try source.append(data) }
        return try advance()
    }

    func finish() throws -> DecoderProgress {
        if let failure { throw failure }
        if isComplete { return .didCompleteLoading }
        source.isFinal = true
        do {
            _ = try advance()
        } catch let error as ImageCodecError where error != .interrupted && !frames.isEmpty {
            // An animation cut short: the frames that arrived are the image, as with GIF and WebP.
            failure = nil
        }
        guard !frames.isEmpty else { try fail(.truncated) }
        complete()
        return .didCompleteLoading
    }

    func render(_ mode: RenderMode, target: TargetSizing) throws -> ImageContainer? {
        if let failure { throw failure }
        guard let properties, let first = frames.first else { return nil }
        if !isComplete {
            // While loading, a view shows the first frame; the animation comes with the complete image.
            guard mode != .completeImage else { return nil }
            return ImageContainer(bitmap: try first.bitmap.rendered(
                orientation: appliedOrientation, fullSize: properties.dimensions, target: target,
                isAnimationFrame: properties.isAnimated))
        }
        return try ImageContainer.rendering(frames, loopCount: properties.loopCount, orientation: appliedOrientation,
                                            fullSize: properties.dimensions, target: target,
                                            isAnimated: properties.isAnimated)
    }

    // MARK: - Driving libavif

    /// Parses, then decodes frames, as far as the bytes allow.
    private func advance() throws -> DecoderProgress {
        guard let decoder else { return .didProgress }
        var progress = DecoderProgress.didProgress
        if !isParsed {
            let result = ipk_avifDecoderParse(decoder)
            if result == AVIF_RESULT_WAITING_ON_IO { return progress }
            guard result == AVIF_RESULT_OK else { try fail(error(for: result)) }
            isParsed = true
            try configureFromHeader(decoder)
            progress = .didLoadHeaders
        }
        while frames.count < framesWanted {
            try guarded { try DecodeInterruption.checkpoint() }
            let result = ipk_avifDecoderNextImage(decoder)
            if result == AVIF_RESULT_WAITING_ON_IO { return progress }
            if result == AVIF_RESULT_NO_IMAGES_REMAINING { break }
            guard result == AVIF_RESULT_OK else { try fail(error(for: result)) }
            let bitmap = try convertCurrentImage(decoder.pointee.image.pointee)
            frames.append(ImageFrame(bitmap: bitmap, duration: decoder.pointee.imageTiming.duration))
            // Frames known so far, as the other codecs count them: a fetch shows an animation's first frame
            // once a second one has been decoded.
            properties?.frameCount = frames.count
            progress = .didLoadFrame
        }
        complete()
        return .didCompleteLoading
    }

    /// Checks the declared size and frame count against the limits and records the properties.
    private func configureFromHeader(_ decoder: UnsafeMutablePointer<avifDecoder>) throws {
        let image = decoder.pointee.image.pointee
        let stored = PixelSize(width: Int(image.width), height: Int(image.height))
        storedSize = stored
        let frameCount = max(1, Int(decoder.pointee.imageCount))
        framesWanted = configuration.decodesAnimation ? frameCount : 1
        try guarded {
            try configuration.limits.check(sourceSize: stored)
            try configuration.limits.check(frameCount: framesWanted, of: stored)
        }
        let limits = configuration.limits
        decoder.pointee.imageSizeLimit = UInt32(min(limits.maxPixels, Int(AVIF_DEFAULT_IMAGE_SIZE_LIMIT)))
        decoder.pointee.imageDimensionLimit = UInt32(clamping: limits.maxDimension)
        let orientation = AVIFOrientation.of(image)
        appliedOrientation = configuration.appliesOrientation ? orientation : .up
        properties = ImageProperties(
            type: .avif, dimensions: appliedOrientation.displayedSize(ofStored: stored),
            isAnimated: frameCount > 1, frameCount: 1, hasAlpha: decoder.pointee.alphaPresent != 0,
            orientation: orientation)
    }

    /// The decoder's current frame as premultiplied RGBA, converted straight into a new bitmap.
    private func convertCurrentImage(_ image: avifImage) throws -> Bitmap {
        let size = PixelSize(width: Int(image.width), height: Int(image.height))
        if size != storedSize {
            // The AV1 data disagrees with the size the limits were checked against: refused before converting.
            try fail(.corrupt("AVIF frame of \(size) does not match the size its container declares"))
        }
        var rgb = avifRGBImage()
        withUnsafePointer(to: image) { ipk_avifRGBImageSetDefaults(&rgb, $0) }
        rgb.format = AVIF_RGB_FORMAT_RGBA
        rgb.depth = 8
        rgb.alphaPremultiplied = 1
        return try guarded {
            try Bitmap(width: size.width, height: size.height) { pixels, bytesPerRow in
                rgb.pixels = pixels.assumingMemoryBound(to: UInt8.self)
                rgb.rowBytes = UInt32(bytesPerRow)
                let result = withUnsafePointer(to: image) { ipk_avifImageYUVToRGB($0, &rgb) }
                guard result == AVIF_RESULT_OK else { throw error(for: result) }
            }
        }
    }

    private func complete() {
        isComplete = true
        properties?.frameCount = frames.count
        properties?.isAnimated = frames.count > 1
    }

    // MARK: - Errors

    /// The typed error for a libavif result: a cut-off file is ``ImageCodecError/truncated`` whatever part
    /// of the parse noticed it.
    private func error(for result: avifResult) -> ImageCodecError {
        let name = String(cString: ipk_avifResultToString(result))
        var detail = ""
        if let decoder {
            detail = withUnsafeBytes(of: decoder.pointee.diag.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        let message = detail.isEmpty ? name : "\(name): \(detail)"
        switch result {
        case AVIF_RESULT_TRUNCATED_DATA:
            return .truncated
        case AVIF_RESULT_NOT_IMPLEMENTED, AVIF_RESULT_NO_CODEC_AVAILABLE, AVIF_RESULT_UNSUPPORTED_DEPTH:
            return .unsupported(message)
        case AVIF_RESULT_OUT_OF_MEMORY:
            return .limitExceeded(.bytes(configuration.limits.maxBytes))
        case AVIF_RESULT_BMFF_PARSE_FAILED where Self.sizeTooLarge(in: detail) != nil:
            // Past libavif's own ceiling (16384² pixels), which no configuration of ours can lift: the same
            // refusal before allocating as ours, so the same error.
            let size = Self.sizeTooLarge(in: detail)!
            let limits = configuration.limits
            return size.width > limits.maxDimension || size.height > limits.maxDimension
                ? .limitExceeded(.dimension(size)) : .limitExceeded(.pixels(size))
        default:
            let cut = source.isFinal && source.withBytes { ImageCompleteness.isComplete(Data($0)) } == false
            return cut ? .truncated : .corrupt(message)
        }
    }

    /// The size in libavif's "dimensions are too large [WxH]" parse message, if that is the message.
    private static func sizeTooLarge(in message: String) -> PixelSize? {
        guard let marker = message.range(of: "too large [") else { return nil }
        let numbers = message[marker.upperBound...].prefix { $0 != "]" }.split(separator: "x").compactMap { Int($0) }
        return numbers.count == 2 ? PixelSize(width: numbers[0], height: numbers[1]) : nil
    }
}
