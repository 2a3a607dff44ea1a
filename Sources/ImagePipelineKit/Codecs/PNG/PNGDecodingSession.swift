import CImageCodecs
import Foundation

/// One PNG being decoded as its bytes arrive, over libpng's progressive reader (`CImageCodecs/png_decode.c`).
///
/// IHDR is read here first, so the decoding limits are checked before libpng or the canvas allocate anything.
/// The canvas holds straight alpha while passes combine; renders premultiply a copy, and the final render
/// premultiplies in place once and hands the buffer over. Not thread-safe: one queue at a time.
final class PNGDecodingSession: ImageDecodingSession, RemembersDecodingFailure {
    /// Largest ancillary chunk libpng may buffer (ICC profiles and text): enough for any real file.
    static let maximumChunkBytes = 8 << 20

    private let configuration: DecoderConfiguration
    private var pending = Data()
    private var decoder: OpaquePointer?
    private var canvas: PixelCanvas?
    private var finalBitmap: Bitmap?
    var failure: ImageCodecError?
    private(set) var properties: ImageProperties?

    init(configuration: DecoderConfiguration) {
        self.configuration = configuration
    }

    deinit {
        if let decoder { ipk_png_decoder_destroy(decoder) }
    }

    private var info: ipk_png_info? { decoder.map { ipk_png_decoder_info($0).pointee } }

    func append(_ data: Data) throws -> DecoderProgress {
        if let failure { throw failure }
        guard let decoder else {
            pending.append(data)
            guard pending.count >= PNGHeader.byteCount else { return .didProgress }
            try start()
            let bytes = pending
            pending = Data()
            return max(.didLoadHeaders, try push(bytes))
        }
        _ = decoder
        return try push(data)
    }

    func finish() throws -> DecoderProgress {
        if let failure { throw failure }
        guard let info, properties != nil else { try fail(.truncated) }
        // A PNG that stops before IEND is truncated, even when some rows arrived: its zlib stream and CRCs
        // are unverified, and a fuzzed file cut inside a broken IDAT would pass for an image. Previews of the
        // rows so far remain available through render(.anyProgress) until then.
        guard info.complete != 0 else { try fail(.truncated) }
        return .didCompleteLoading
    }

    func render(_ mode: RenderMode, target: TargetSizing) throws -> ImageContainer? {
        if let failure { throw failure }
        guard let properties, let canvas, let info else { return nil }
        let bitmap: Bitmap
        if let finalBitmap {
            bitmap = finalBitmap
        } else if info.complete != 0 {
            for y in 0..<canvas.height {
                ipk_premultiply_rgba_row((canvas.pointer + y * canvas.bytesPerRow).assumingMemoryBound(to: UInt8.self), canvas.width)
            }
            bitmap = canvas.freeze()
            finalBitmap = bitmap
        } else {
            guard mode != .completeImage, let preview = try preview(of: canvas, info: info, mode: mode)
            else { return nil }
            bitmap = preview
        }
        return ImageContainer(bitmap: try bitmap.rendered(orientation: .up, fullSize: properties.dimensions, target: target))
    }

    // MARK: - Decoding

    /// Reads IHDR, checks the limits, allocates the canvas and starts libpng.
    private func start() throws {
        let header: PNGHeader
        do {
            header = try PNGHeader(pending)
            try configuration.limits.check(sourceSize: header.size)
            try configuration.limits.check(frameCount: 1, of: header.size)
        } catch {
            try fail(error)
        }
        let canvas: PixelCanvas
        do {
            canvas = try PixelCanvas(width: header.size.width, height: header.size.height)
        } catch {
            try fail(error)
        }
        // Rows that never arrive stay transparent.
        canvas.clear()
        guard let decoder = ipk_png_decoder_create(
            UInt32(header.size.width), UInt32(header.size.height), canvas.pointer.assumingMemoryBound(to: UInt8.self),
            canvas.bytesPerRow, min(Self.maximumChunkBytes, configuration.limits.maxBytes))
        else { try fail(.limitExceeded(.bytes(canvas.bytesPerRow * canvas.height))) }
        self.decoder = decoder
        self.canvas = canvas
        properties = ImageProperties(
            type: .png, dimensions: header.size, isProgressive: header.isInterlaced,
            hasAlpha: header.colorType & 4 != 0)
    }

    private func push(_ data: Data) throws -> DecoderProgress {
        guard let decoder else { return .didProgress }
        let status = data.withUnsafeBytes { bytes in
            ipk_png_decoder_push(decoder, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        if let info, info.header_seen != 0 { properties?.hasAlpha = info.has_alpha != 0 }
        switch status {
        case IPK_PNG_COMPLETE: return .didCompleteLoading
        case IPK_PNG_PASS: return .didLoadFrame
        case IPK_PNG_PROGRESS, IPK_PNG_NEED_MORE: return .didProgress
        default:
            var message = ""
            if let info {
                message = withUnsafeBytes(of: info.message) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
            }
            try fail(.corrupt(message.isEmpty ? "invalid PNG data" : message))
        }
    }

    /// Rows so far (non-interlaced, any-progress only) or the completed Adam7 passes, each known pixel
    /// filling the block it stands for until later passes refine it, premultiplied.
    private func preview(of canvas: PixelCanvas, info: ipk_png_info, mode: RenderMode) throws -> Bitmap? {
        let source = canvas.pointer
        let stride = canvas.bytesPerRow
        if info.interlaced == 0 {
            let rows = Int(info.rows_completed)
            guard rows > 0, mode == .anyProgress else { return nil }
            let bitmap = try canvas.snapshot(rows: rows)
            bitmap.withUnsafeBytes { pixels in
                let base = UnsafeMutableRawPointer(mutating: pixels.baseAddress!)
                for y in 0..<rows {
                    ipk_premultiply_rgba_row((base + y * bitmap.bytesPerRow).assumingMemoryBound(to: UInt8.self), bitmap.width)
                }
            }
            return bitmap
        }
        let passes = Int(info.passes_completed)
        guard passes > 0 else { return nil }
        // After pass n, Adam7 has filled every pixel on this grid.
        let grid = [(8, 8), (4, 8), (4, 4), (2, 4), (2, 2), (1, 2), (1, 1)][min(passes, 7) - 1]
        return try Bitmap(width: canvas.width, height: canvas.height) { destination, destinationStride in
            for y in 0..<canvas.height {
                let sourceRow = (source + (y - y % grid.1) * stride).assumingMemoryBound(to: UInt32.self)
                let row = (destination + y * destinationStride).assumingMemoryBound(to: UInt32.self)
                for x in 0..<canvas.width { row[x] = sourceRow[x - x % grid.0] }
                ipk_premultiply_rgba_row(UnsafeMutableRawPointer(row).assumingMemoryBound(to: UInt8.self), canvas.width)
            }
        }
    }
}
