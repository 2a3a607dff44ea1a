import CWebP
import Foundation

/// One WebP being decoded as its bytes arrive.
///
/// The features (size, alpha, animation) are read from the first bytes and checked against the limits before
/// anything is allocated. Stills go through libwebp's incremental decoder straight into our canvas;
/// animations wait for the whole RIFF container, then libwebp's animation decoder composites each frame
/// (blending and disposal) into a canvas we copy per frame. Not thread-safe: one queue at a time.
final class WebPDecodingSession: ImageDecodingSession, RemembersDecodingFailure {
    private let configuration: DecoderConfiguration
    private var buffer = Data()
    private var features: WebPBitstreamFeatures?
    /// Bytes the RIFF header says the file has (its size field + 8).
    private var declaredLength = 0
    private var incremental: OpaquePointer?
    private var canvas: PixelCanvas?
    private var finalImage: ImageContainer?
    private var rowsDecoded = 0
    var failure: ImageCodecError?
    private(set) var properties: ImageProperties?

    init(configuration: DecoderConfiguration) {
        self.configuration = configuration
    }

    deinit {
        if let incremental { WebPIDelete(incremental) }
    }

    func append(_ data: Data) throws -> DecoderProgress {
        if let failure { throw failure }
        if finalImage != nil { return .didCompleteLoading }
        var progress = DecoderProgress.didProgress
        if features == nil {
            buffer.append(data)
            guard try readFeatures() else { return .didProgress }
            progress = .didLoadHeaders
            if properties?.isAnimated == false {
                // The incremental decoder keeps its own copy from here on.
                let received = buffer
                buffer = Data()
                return max(progress, try appendStill(received))
            }
        } else if properties?.isAnimated == false {
            return try appendStill(data)
        } else {
            buffer.append(data)
        }
        if buffer.count >= declaredLength { try decodeAnimation() }
        return finalImage != nil ? .didCompleteLoading : progress
    }

    func finish() throws -> DecoderProgress {
        if let failure { throw failure }
        if finalImage != nil { return .didCompleteLoading }
        guard let properties else { try fail(.truncated) }
        if properties.isAnimated {
            // The RIFF size promised more: libwebp's demuxer may still find whole frames in what came.
            try decodeAnimation()
            return .didCompleteLoading
        }
        // A cut-off still: the rows that arrived are the image, as browsers show it.
        guard rowsDecoded > 0, let canvas else { try fail(.truncated) }
        finalImage = ImageContainer(bitmap: try canvas.snapshot(rows: rowsDecoded))
        return .didCompleteLoading
    }

    func render(_ mode: RenderMode, target: TargetSizing) throws -> ImageContainer? {
        if let failure { throw failure }
        guard let properties else { return nil }
        if let finalImage {
            return try ImageContainer.rendering(finalImage.frames, loopCount: finalImage.loopCount, orientation: .up,
                                                fullSize: properties.dimensions, target: target,
                                                isAnimated: properties.isAnimated)
        }
        guard mode == .anyProgress, let canvas, rowsDecoded > 0 else { return nil }
        let preview = try canvas.snapshot(rows: rowsDecoded)
        return ImageContainer(bitmap: try preview.rendered(orientation: .up, fullSize: properties.dimensions, target: target,
                                                           isAnimationFrame: properties.isAnimated))
    }

    // MARK: - Decoding

    /// Reads the bitstream features once enough bytes are in; checks the limits.
    private func readFeatures() throws -> Bool {
        guard buffer.count >= 12 else { return false }
        var features = WebPBitstreamFeatures()
        let status = buffer.withUnsafeBytes { bytes in
            WebPGetFeatures(bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count, &features)
        }
        if status == VP8_STATUS_NOT_ENOUGH_DATA { return false }
        guard status == VP8_STATUS_OK else { try fail(.corrupt(Self.describe(status))) }
        let size = PixelSize(width: Int(features.width), height: Int(features.height))
        do {
            try configuration.limits.check(sourceSize: size)
            try configuration.limits.check(frameCount: 1, of: size)
        } catch {
            try fail(error)
        }
        let riffSize = buffer.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: 4, as: UInt32.self).littleEndian) }
        declaredLength = riffSize + 8
        self.features = features
        properties = ImageProperties(
            type: .webp, dimensions: size, isAnimated: features.has_animation != 0, hasAlpha: features.has_alpha != 0)
        if features.has_animation == 0 {
            let canvas = try guarded { try PixelCanvas(width: size.width, height: size.height) }
            canvas.clear()
            guard let decoder = WebPINewRGB(
                MODE_rgbA, canvas.pointer.assumingMemoryBound(to: UInt8.self), canvas.bytesPerRow * canvas.height,
                Int32(canvas.bytesPerRow))
            else { try fail(.limitExceeded(.bytes(canvas.bytesPerRow * canvas.height))) }
            self.canvas = canvas
            incremental = decoder
        }
        return true
    }

    private func appendStill(_ data: Data) throws -> DecoderProgress {
        guard let incremental, let canvas else { return .didProgress }
        let status = data.withUnsafeBytes { bytes in
            WebPIAppend(incremental, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        var lastRow: Int32 = 0
        _ = WebPIDecGetRGB(incremental, &lastRow, nil, nil, nil)
        rowsDecoded = Int(lastRow)
        switch status {
        case VP8_STATUS_OK:
            finalImage = ImageContainer(bitmap: canvas.freeze())
            return .didCompleteLoading
        case VP8_STATUS_SUSPENDED:
            return .didProgress
        default:
            try fail(.corrupt(Self.describe(status)))
        }
    }

    /// Decodes every frame of a complete (or, at finish, cut-off) animation.
    private func decodeAnimation() throws {
        guard let properties else { return }
        var options = WebPAnimDecoderOptions()
        guard WebPAnimDecoderOptionsInit(&options) != 0 else { try fail(.corrupt("libwebp version mismatch")) }
        options.color_mode = MODE_rgbA
        options.use_threads = 0
        let frames: [ImageFrame]
        var loopCount = 0
        frames = try buffer.withUnsafeBytes { bytes -> [ImageFrame] in
            var data = WebPData(bytes: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), size: bytes.count)
            guard let decoder = WebPAnimDecoderNew(&data, &options) else {
                try fail(buffer.count < declaredLength ? .truncated : .corrupt("invalid WebP animation"))
            }
            defer { WebPAnimDecoderDelete(decoder) }
            var info = WebPAnimInfo()
            guard WebPAnimDecoderGetInfo(decoder, &info) != 0 else { try fail(.corrupt("invalid WebP animation")) }
            let size = PixelSize(width: Int(info.canvas_width), height: Int(info.canvas_height))
            // Every frame becomes a full-canvas bitmap: check them all before decoding the first.
            try guarded {
                try configuration.limits.check(sourceSize: size)
                try configuration.limits.check(frameCount: Int(info.frame_count), of: size)
            }
            loopCount = Int(info.loop_count)
            var frames: [ImageFrame] = []
            var previousTimestamp: Int32 = 0
            let wanted = configuration.decodesAnimation ? Int(info.frame_count) : 1
            while frames.count < wanted, WebPAnimDecoderHasMoreFrames(decoder) != 0 {
                var pixels: UnsafeMutablePointer<UInt8>?
                var timestamp: Int32 = 0
                guard WebPAnimDecoderGetNext(decoder, &pixels, &timestamp) != 0, let pixels else { break }
                let bitmap = try Bitmap(width: size.width, height: size.height) { destination, stride in
                    for y in 0..<size.height {
                        (destination + y * stride).copyMemory(from: pixels + y * size.width * 4, byteCount: size.width * 4)
                    }
                }
                frames.append(ImageFrame(bitmap: bitmap, duration: Double(timestamp - previousTimestamp) / 1000))
                previousTimestamp = timestamp
            }
            return frames
        }
        guard !frames.isEmpty else { try fail(.truncated) }
        finalImage = frames.count == 1 ? ImageContainer(bitmap: frames[0].bitmap) : ImageContainer(frames: frames, loopCount: loopCount)
        self.properties?.frameCount = frames.count
        self.properties?.loopCount = loopCount
        self.properties?.isAnimated = frames.count > 1
        _ = properties
    }

    private static func describe(_ status: VP8StatusCode) -> String {
        switch status {
        case VP8_STATUS_BITSTREAM_ERROR: "invalid WebP bitstream"
        case VP8_STATUS_UNSUPPORTED_FEATURE: "unsupported WebP feature"
        case VP8_STATUS_NOT_ENOUGH_DATA: "WebP data ends early"
        case VP8_STATUS_OUT_OF_MEMORY: "libwebp ran out of memory"
        default: "WebP decoding failed (status \(status.rawValue))"
        }
    }
}
