import CImageCodecs
import Foundation

/// One JPEG being decoded as its bytes arrive, over the C decoder in `CImageCodecs/jpeg_decode.c`.
///
/// Baseline files decode row by row into a canvas as data arrives. Progressive files fed incrementally keep
/// libjpeg's coefficients (buffered-image mode) so each render shows every scan received so far; fed in one go
/// they decode in a single pass. Not thread-safe: one queue at a time.
final class JPEGDecodingSession: ImageDecodingSession, RemembersDecodingFailure {
    enum Mode {
        /// Bytes arrive over time; progressive scans can be rendered.
        case incremental
        /// All bytes come in one append; only the complete image is rendered.
        case oneShot
    }

    private let cDecoder: OpaquePointer?
    private let configuration: DecoderConfiguration
    private let mode: Mode
    private(set) var properties: ImageProperties?
    /// The orientation the renders stand upright (``ImageOrientation/up`` when the configuration says not to).
    private var appliedOrientation = ImageOrientation.up
    private var canvas: PixelCanvas?
    private var finalBitmap: Bitmap?
    /// Set by `finish`: no more bytes come, so nothing waits for another append.
    private var isFinal = false
    /// Set when `advance` stopped at the headers with bytes not yet decoded (see `advance`); a render decodes
    /// them first.
    private var isPausedAtHeaders = false
    var failure: ImageCodecError?

    init(configuration: DecoderConfiguration, mode: Mode) {
        self.configuration = configuration
        self.mode = mode
        cDecoder = ipk_jpeg_decoder_create(configuration.limits.maxBytes)
        // Creation fails only when malloc does; the session then reports it on first use.
        if cDecoder == nil { failure = .limitExceeded(.bytes(MemoryLayout<ipk_jpeg_info>.size)) }
        // Every few rows, the decode running on this thread may be told to stop (DecodeInterruption).
        if let cDecoder { ipk_jpeg_decoder_set_stop_check(cDecoder, jpegShouldStop) }
    }

    deinit {
        ipk_jpeg_decoder_destroy(cDecoder)
    }

    /// Only used after the `failure` check every entry point starts with, which covers a failed creation.
    private var decoder: OpaquePointer { cDecoder! }

    /// The size libjpeg decodes at (after DCT scaling), once the headers are in.
    var decodedSize: PixelSize? { finalBitmap?.size ?? canvas.map { PixelSize(width: $0.width, height: $0.height) } }

    private var info: ipk_jpeg_info { ipk_jpeg_decoder_info(decoder).pointee }

    func append(_ data: Data) throws -> DecoderProgress {
        if let failure { throw failure }
        let status = data.withUnsafeBytes { bytes in
            ipk_jpeg_decoder_feed(decoder, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        if status != 0 { try fail(.limitExceeded(.bytes(data.count))) }
        return try advance()
    }

    /// A one-shot session's whole file, read where it lies rather than copied into libjpeg's input buffer (a
    /// copy of every downloaded image otherwise). `bytes` must stay valid until ``finish()`` has returned; no
    /// append may follow.
    func appendWhole(_ bytes: UnsafeRawBufferPointer) throws -> DecoderProgress {
        if let failure { throw failure }
        let status = ipk_jpeg_decoder_feed_whole(decoder, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        if status != 0 { try fail(.corrupt("JPEG data given to a decoder that already had some")) }
        return try advance()
    }

    func finish() throws -> DecoderProgress {
        if let failure { throw failure }
        let hadImageData = info.rows_decoded > 0 || info.scans_completed > 0 || info.input_scan_number >= 2
        ipk_jpeg_decoder_set_final(decoder)
        isFinal = true
        let progress: DecoderProgress
        do {
            progress = try advance()
        } catch {
            // libjpeg read the fake EOI where the data stopped as part of a marker or scan header: whatever it
            // complains about, the cause is the cut.
            if info.truncated != 0 || properties == nil { failure = .truncated; throw ImageCodecError.truncated }
            throw error
        }
        // libjpeg completes a cut-off file by inventing the rest; with no real image data that is no image.
        guard progress == .didCompleteLoading, properties != nil, info.truncated == 0 || hadImageData else {
            try fail(.truncated)
        }
        return progress
    }

    func render(_ renderMode: RenderMode, target: TargetSizing) throws -> ImageContainer? {
        if let failure { throw failure }
        if isPausedAtHeaders { _ = try advance() }
        guard let properties, let canvas else { return nil }
        let bitmap: Bitmap
        if let finalBitmap {
            bitmap = finalBitmap
        } else if info.input_complete != 0 {
            let frozen = canvas.freeze()
            finalBitmap = frozen
            bitmap = frozen
        } else {
            guard renderMode != .completeImage, mode == .incremental, let preview = try renderPreview(renderMode)
            else { return nil }
            bitmap = preview
        }
        let rendered = try bitmap.rendered(orientation: appliedOrientation, fullSize: properties.dimensions, target: target)
        return ImageContainer(bitmap: rendered)
    }

    // MARK: - Driving the C decoder

    /// Runs the decoder as far as the bytes allow and says what that achieved.
    private func advance() throws -> DecoderProgress {
        isPausedAtHeaders = false
        var progress = DecoderProgress.didProgress
        while true {
            switch ipk_jpeg_decoder_advance(decoder) {
            case IPK_JPEG_NEED_MORE:
                return progress
            case IPK_JPEG_HEADER:
                guard canvas == nil else { return progress }   // cannot happen: configured on first sight
                try configureFromHeader()
                progress = max(progress, .didLoadHeaders)
                // An incremental session stops at its headers once: the caller decides from them whether
                // anything will be shown while loading, and a baseline image that nobody shows that way (most
                // images) is then dropped before libjpeg has set up its decoder or decoded a row. The bytes
                // already given are kept and decoded by the next append, by `finish` or by a render.
                if mode == .incremental, !isFinal {
                    isPausedAtHeaders = true
                    return progress
                }
            case IPK_JPEG_PROGRESS:
                // A complete progressive scan is a new frame; more baseline rows are just progress.
                if properties?.isProgressive == true { progress = max(progress, .didLoadFrame) }
            case IPK_JPEG_COMPLETE:
                return .didCompleteLoading
            default:
                try fail(Self.error(for: info))
            }
        }
    }

    /// Checks the limits against the declared size, picks the DCT scale and attaches the output canvas.
    private func configureFromHeader() throws {
        let header = info
        let stored = PixelSize(width: Int(header.width), height: Int(header.height))
        try guarded { try configuration.limits.check(sourceSize: stored) }
        let orientation = Self.orientation(of: header)
        appliedOrientation = configuration.appliesOrientation ? orientation : .up
        properties = ImageProperties(
            type: .jpeg, dimensions: appliedOrientation.displayedSize(ofStored: stored),
            isProgressive: header.progressive != 0, orientation: orientation)

        let denominator = configuration.preferredSizing?
            .jpegScaleDenominator(stored: stored, orientation: appliedOrientation) ?? 1
        let buffered: Int32 = mode == .incremental ? 1 : 0
        guard ipk_jpeg_decoder_configure(decoder, Int32(denominator), buffered) == 0 else {
            try fail(Self.error(for: info))
        }
        let output = PixelSize(width: Int(info.output_width), height: Int(info.output_height))
        try guarded { try configuration.limits.check(frameCount: 1, of: output) }
        // Multi-scan files also keep every coefficient while decoding.
        let canvasBytes = Bitmap.alignedBytesPerRow(forWidth: output.width) * output.height
        let (workingBytes, overflow) = canvasBytes.addingReportingOverflow(Int(clamping: info.coefficient_bytes))
        if overflow || workingBytes > configuration.limits.maxBytes {
            try fail(.limitExceeded(.bytes(overflow ? Int.max : workingBytes)))
        }
        // The coefficients count against the budget of decodes in flight as much as the pixels do.
        try guarded { try configuration.limits.claimDecodeMemory(workingBytes) }
        let canvas = try guarded { try PixelCanvas(width: output.width, height: output.height) }
        ipk_jpeg_decoder_set_canvas(decoder, canvas.pointer.assumingMemoryBound(to: UInt8.self), canvas.bytesPerRow)
        self.canvas = canvas
    }

    /// What a render before completion shows: every scan so far (progressive), or the rows so far (baseline,
    /// any-progress only: a baseline file has no complete frame before its end).
    private func renderPreview(_ renderMode: RenderMode) throws -> Bitmap? {
        guard let canvas else { return nil }
        if properties?.isProgressive == true {
            // Render straight into a fresh bitmap, then point the decoder back at its own canvas for the final
            // pass: a preview costs one output pass and no copy.
            var rendered = Int32(0)
            let preview = try Bitmap(width: canvas.width, height: canvas.height) { pixels, stride in
                ipk_jpeg_decoder_set_canvas(decoder, pixels.assumingMemoryBound(to: UInt8.self), stride)
                rendered = ipk_jpeg_decoder_render_progressive(decoder)
                ipk_jpeg_decoder_set_canvas(decoder, canvas.pointer.assumingMemoryBound(to: UInt8.self), canvas.bytesPerRow)
            }
            if rendered < 0 { try fail(Self.error(for: info)) }
            return rendered == 1 ? preview : nil
        }
        let rows = Int(info.rows_decoded)
        guard renderMode == .anyProgress, rows > 0 else { return nil }
        return try canvas.snapshot(rows: rows)
    }

    // MARK: - Reading the C side

    private static func orientation(of header: ipk_jpeg_info) -> ImageOrientation {
        guard let exif = header.exif, header.exif_length > 0 else { return .up }
        return EXIFOrientation.read(from: UnsafeRawBufferPointer(start: exif, count: header.exif_length))
    }

    private static func error(for info: ipk_jpeg_info) -> ImageCodecError {
        let message = withUnsafeBytes(of: info.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        switch info.failure {
        case IPK_JPEG_FAILURE_INTERRUPTED:
            return .interrupted
        case IPK_JPEG_FAILURE_UNSUPPORTED:
            return .unsupported(message)
        case IPK_JPEG_FAILURE_MEMORY:
            // libjpeg's working memory: roughly the coefficient buffer a progressive file needs.
            let estimate = PixelSize(width: Int(info.width), height: Int(info.height)).area
                .multipliedReportingOverflow(by: max(1, Int(info.components)) * 2)
            return .limitExceeded(.bytes(estimate.overflow ? Int.max : estimate.partialValue))
        default:
            return .corrupt(message.isEmpty ? "invalid JPEG data" : message)
        }
    }
}

/// The JPEG decoder's stop check: the ``DecodeInterruption`` bound where the decode runs, if any.
private let jpegShouldStop: @convention(c) () -> Int32 = {
    (DecodeInterruption.current?.shouldStop() ?? false) ? 1 : 0
}
