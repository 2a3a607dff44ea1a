import CCodecsOnDemand
import CImageCodecs
import CJXL
import Foundation

/// One JPEG XL being decoded as its bytes arrive, over libjxl's event-driven decoder.
///
/// The basic info (size, orientation, alpha, animation) is checked against the limits before libjxl is
/// given an output buffer; each frame's buffer is checked again as the frames come. libjxl writes 8-bit
/// RGBA straight into our canvas (rows aligned as ``Bitmap`` wants them), with straight alpha that we
/// premultiply. Decoding stops for a ``DecodeInterruption`` between frames and between progressive passes.
/// Orientation is kept out of libjxl's hands so that it is applied, or not, as for every other format.
/// Not thread-safe: one queue at a time.
final class JPEGXLDecodingSession: ImageDecodingSession, RemembersDecodingFailure {
    private let configuration: DecoderConfiguration
    private let decoder: OpaquePointer?
    /// Bytes given to libjxl that it has not consumed yet (it asks for them again with the next bytes).
    private var pending = Data()
    private var basicInfo: JxlBasicInfo?
    /// The frame being decoded, once libjxl has announced it.
    private var canvas: PixelCanvas?
    private var frameDuration = 0.0
    /// Whether a progressive pass of the current frame is complete, so a flush shows a whole pass.
    private var hasPass = false
    /// Finished frames, as stored (not yet turned upright).
    private var frames: [ImageFrame] = []
    private var isComplete = false
    private var appliedOrientation = ImageOrientation.up
    var failure: ImageCodecError?
    private(set) var properties: ImageProperties?

    /// 8-bit RGBA rows padded to the bitmap alignment: libjxl's stride is then exactly ``Bitmap``'s.
    private static var pixelFormat: JxlPixelFormat {
        JxlPixelFormat(num_channels: 4, data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN,
                       align: BitmapBufferPool.alignment)
    }

    init(configuration: DecoderConfiguration) {
        self.configuration = configuration
        if let unavailable = ipk_jxl_load() {
            decoder = nil
            failure = .unsupported("JPEG XL: \(String(cString: unavailable))")
            return
        }
        decoder = ipk_JxlDecoderCreate(nil)
        guard let decoder else {
            failure = .limitExceeded(.bytes(1 << 20))
            return
        }
        let events = JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_FRAME.rawValue | JXL_DEC_FULL_IMAGE.rawValue
            | JXL_DEC_FRAME_PROGRESSION.rawValue
        let configured = ipk_JxlDecoderSubscribeEvents(decoder, Int32(events)) == JXL_DEC_SUCCESS
            && ipk_JxlDecoderSetKeepOrientation(decoder, 1) == JXL_DEC_SUCCESS
            && ipk_JxlDecoderSetUnpremultiplyAlpha(decoder, 1) == JXL_DEC_SUCCESS
            && ipk_JxlDecoderSetProgressiveDetail(decoder, kPasses) == JXL_DEC_SUCCESS
        if !configured { failure = .unsupported("libjxl refused the decoder settings") }
    }

    deinit {
        if let decoder { ipk_JxlDecoderDestroy(decoder) }
    }

    func append(_ data: Data) throws -> DecoderProgress {
        if let failure { throw failure }
        if isComplete { return .didCompleteLoading }
        pending.append(data)
        return try advance(isFinal: false)
    }

    func finish() throws -> DecoderProgress {
        if let failure { throw failure }
        if isComplete { return .didCompleteLoading }
        // What a cut-off still shows: the passes that arrived, as progressive JPEG does.
        let partial = frames.isEmpty && hasPass ? try flushedCanvas() : nil
        do {
            _ = try advance(isFinal: true)
        } catch let error as ImageCodecError where error != .interrupted && (!frames.isEmpty || partial != nil) {
            failure = nil
        }
        if !isComplete {
            if frames.isEmpty, let partial { frames = [ImageFrame(bitmap: partial, duration: 0)] }
            guard !frames.isEmpty else { try fail(.truncated) }
            complete()
        }
        return .didCompleteLoading
    }

    func render(_ mode: RenderMode, target: TargetSizing) throws -> ImageContainer? {
        if let failure { throw failure }
        guard let properties else { return nil }
        if isComplete {
            return try ImageContainer.rendering(frames, loopCount: properties.loopCount, orientation: appliedOrientation,
                                                fullSize: properties.dimensions, target: target,
                                                isAnimated: properties.isAnimated)
        }
        guard mode != .completeImage else { return nil }
        // An animation shows its first frame while loading; a still the passes decoded so far.
        let preview: Bitmap
        if let first = frames.first {
            preview = first.bitmap
        } else if hasPass || mode == .anyProgress, let flushed = try flushedCanvas() {
            preview = flushed
        } else {
            return nil
        }
        return ImageContainer(bitmap: try preview.rendered(
            orientation: appliedOrientation, fullSize: properties.dimensions, target: target,
            isAnimationFrame: properties.isAnimated))
    }

    // MARK: - Driving libjxl

    /// Hands the pending bytes to libjxl and handles its events until it needs more (or is done).
    private func advance(isFinal: Bool) throws -> DecoderProgress {
        guard let decoder else { return .didProgress }
        var progress = DecoderProgress.didProgress
        var status = JXL_DEC_NEED_MORE_INPUT
        var unconsumed = 0
        let input = pending
        try input.withUnsafeBytes { bytes in
            guard ipk_JxlDecoderSetInput(decoder, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
                    == JXL_DEC_SUCCESS else { try fail(.corrupt("libjxl refused its input")) }
            if isFinal { ipk_JxlDecoderCloseInput(decoder) }
            defer { unconsumed = ipk_JxlDecoderReleaseInput(decoder) }
            while !isComplete {
                status = ipk_JxlDecoderProcessInput(decoder)
                guard status != JXL_DEC_NEED_MORE_INPUT else { break }
                progress = max(progress, try handle(status, decoder: decoder, isFinal: isFinal))
            }
        }
        pending = unconsumed == 0 ? Data() : Data(input.suffix(unconsumed))
        if isComplete { return .didCompleteLoading }
        if isFinal { try fail(.truncated) }
        return progress
    }

    /// Acts on one event of libjxl's.
    /// An error once the input is closed is the cut's doing: before, libjxl would have asked for more bytes.
    private func handle(_ status: JxlDecoderStatus, decoder: OpaquePointer, isFinal: Bool) throws -> DecoderProgress {
        switch status {
        case JXL_DEC_BASIC_INFO:
            try readBasicInfo(decoder)
            return .didLoadHeaders
        case JXL_DEC_FRAME:
            try guarded { try DecodeInterruption.checkpoint() }
            try startFrame(decoder)
            return .didProgress
        case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
            try attachCanvas(decoder)
            return .didProgress
        case JXL_DEC_FRAME_PROGRESSION:
            try guarded { try DecodeInterruption.checkpoint() }
            hasPass = true
            return .didLoadFrame
        case JXL_DEC_FULL_IMAGE:
            try finishFrame()
            return .didLoadFrame
        case JXL_DEC_SUCCESS:
            complete()
            return .didCompleteLoading
        default:
            try fail(isFinal ? .truncated : .corrupt("invalid JPEG XL data"))
        }
    }

    /// Checks the declared size against the limits before libjxl allocates any frame.
    private func readBasicInfo(_ decoder: OpaquePointer) throws {
        var info = JxlBasicInfo()
        guard ipk_JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS else { try fail(.corrupt("invalid JPEG XL header")) }
        let stored = PixelSize(width: Int(info.xsize), height: Int(info.ysize))
        try guarded {
            try configuration.limits.check(sourceSize: stored)
            try configuration.limits.check(frameCount: 1, of: stored)
        }
        basicInfo = info
        let orientation = ImageOrientation(exifValue: Int(info.orientation.rawValue))
        appliedOrientation = configuration.appliesOrientation ? orientation : .up
        // A still is progressive by design (a VarDCT frame sends its 1:8 DC image first, `cjxl -p` adds passes),
        // so the pipeline's progressive path may show its passes; an animation shows its first frame instead.
        properties = ImageProperties(
            type: .jxl, dimensions: appliedOrientation.displayedSize(ofStored: stored),
            isProgressive: info.have_animation == 0, isAnimated: info.have_animation != 0,
            hasAlpha: info.alpha_bits != 0, orientation: orientation, loopCount: Int(info.animation.num_loops))
    }

    /// A new frame: its duration, and the limits checked for every frame so far plus this one.
    private func startFrame(_ decoder: OpaquePointer) throws {
        guard let info = basicInfo else { try fail(.corrupt("JPEG XL frame before its header")) }
        var header = JxlFrameHeader()
        guard ipk_JxlDecoderGetFrameHeader(decoder, &header) == JXL_DEC_SUCCESS else { try fail(.corrupt("invalid JPEG XL frame")) }
        let ticksPerSecond = Double(info.animation.tps_numerator) / Double(max(1, info.animation.tps_denominator))
        frameDuration = info.have_animation != 0 && ticksPerSecond > 0 ? Double(header.duration) / ticksPerSecond : 0
        let stored = PixelSize(width: Int(info.xsize), height: Int(info.ysize))
        try guarded { try configuration.limits.check(frameCount: frames.count + 1, of: stored) }
        hasPass = false
    }

    /// Gives libjxl a fresh canvas for the frame's pixels.
    private func attachCanvas(_ decoder: OpaquePointer) throws {
        guard let info = basicInfo else { try fail(.corrupt("JPEG XL frame before its header")) }
        let canvas = try guarded { try PixelCanvas(width: Int(info.xsize), height: Int(info.ysize)) }
        canvas.clear()
        var format = Self.pixelFormat
        var needed = 0
        let byteCount = canvas.bytesPerRow * canvas.height
        guard ipk_JxlDecoderImageOutBufferSize(decoder, &format, &needed) == JXL_DEC_SUCCESS, needed <= byteCount,
              ipk_JxlDecoderSetImageOutBuffer(decoder, &format, canvas.pointer, byteCount) == JXL_DEC_SUCCESS
        else { try fail(.unsupported("libjxl cannot write this image as 8-bit RGBA")) }
        self.canvas = canvas
    }

    /// The frame's pixels are all in: premultiply them and keep the frame.
    private func finishFrame() throws {
        guard let canvas else { try fail(.corrupt("JPEG XL image without a frame")) }
        if properties?.hasAlpha == true { Self.premultiply(canvas.pointer, canvas: canvas) }
        frames.append(ImageFrame(bitmap: canvas.freeze(), duration: frameDuration))
        // Frames known so far: a fetch shows an animation's first frame once it has seen the second.
        properties?.frameCount = frames.count
        self.canvas = nil
        hasPass = false
        if !configuration.decodesAnimation { complete() }
    }

    /// What libjxl can show of the current frame now, premultiplied, or `nil` when it has nothing yet.
    private func flushedCanvas() throws -> Bitmap? {
        guard let decoder, let canvas, ipk_JxlDecoderFlushImage(decoder) == JXL_DEC_SUCCESS else { return nil }
        let premultiplies = properties?.hasAlpha == true
        return try Bitmap(width: canvas.width, height: canvas.height) { pixels, bytesPerRow in
            pixels.copyMemory(from: canvas.pointer, byteCount: bytesPerRow * canvas.height)
            if premultiplies { Self.premultiply(pixels, canvas: canvas) }
        }
    }

    private static func premultiply(_ pixels: UnsafeMutableRawPointer, canvas: PixelCanvas) {
        for row in 0..<canvas.height {
            ipk_premultiply_rgba_row((pixels + row * canvas.bytesPerRow).assumingMemoryBound(to: UInt8.self), canvas.width)
        }
    }

    private func complete() {
        isComplete = true
        properties?.frameCount = max(1, frames.count)
        properties?.isAnimated = frames.count > 1
    }
}
