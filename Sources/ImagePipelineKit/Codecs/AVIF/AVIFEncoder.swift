import CAVIF
import CCodecsOnDemand
import Foundation

/// Writes stills as AVIF through libavif and whichever AV1 encoder it was built with (libaom, rav1e or
/// SVT-AV1): 8-bit 4:2:0, with an alpha plane only when the image has transparency. An animation is written as
/// its first frame.
///
/// libavif is loaded on first use, as for decoding. ``isAvailable`` says whether it loads and can encode;
/// ``AVIFCodec/encoder`` is `nil` where it cannot, so a catalogue never offers an encoder that always fails.
public struct AVIFEncoder: ImageEncoder {
    public init() {}

    /// Whether libavif loads here and has an AV1 encoder (a build of libavif may decode only).
    public static let isAvailable: Bool = {
        guard ipk_avif_load() == nil else { return false }
        return ipk_avifCodecName(AVIF_CODEC_CHOICE_AUTO, avifCodecFlags(AVIF_CODEC_FLAG_CAN_ENCODE.rawValue)) != nil
    }()

    /// The encoder's speed, 0 (slowest, smallest) to 10: 8 keeps a thumbnail's encode in the tens of
    /// milliseconds, about what its decode and scale cost, at a few percent more bytes than the default 6.
    static let speed: Int32 = 8

    /// `quality` 0...1 maps linearly onto AV1's quantizer, 63 (worst) to 0 (lossless-grade); the alpha plane,
    /// when there is one, is kept at the best quantizer so edges do not bleed.
    /// - Throws: ``ImageCodecError/unsupported(_:)`` when libavif cannot be loaded or has no encoder, and
    ///   ``ImageCodecError/encodingFailed(_:)`` when it refuses the image.
    public func encode(_ image: ImageContainer, options: EncodingOptions, quality: Double) throws -> Data {
        guard Self.isAvailable else {
            let reason = ipk_avif_load().map { String(cString: $0) } ?? "this libavif has no AV1 encoder"
            throw ImageCodecError.unsupported("AVIF: \(reason)")
        }
        let bitmap = image.bitmap
        guard let planes = ipk_avifImageCreate(UInt32(bitmap.width), UInt32(bitmap.height), 8, AVIF_PIXEL_FORMAT_YUV420) else {
            throw ImageCodecError.encodingFailed("libavif could not allocate a \(bitmap.width)x\(bitmap.height) image")
        }
        defer { ipk_avifImageDestroy(planes) }
        try convert(bitmap, into: planes)

        guard let encoder = ipk_avifEncoderCreate() else { throw ImageCodecError.encodingFailed("libavif could not make an encoder") }
        defer { ipk_avifEncoderDestroy(encoder) }
        let quantizer = Int32((1 - min(max(quality, 0), 1)) * Double(AVIF_QUANTIZER_WORST_QUALITY)) // rounds toward best
        encoder.pointee.speed = Self.speed
        encoder.pointee.minQuantizer = quantizer
        encoder.pointee.maxQuantizer = quantizer
        encoder.pointee.minQuantizerAlpha = AVIF_QUANTIZER_LOSSLESS
        encoder.pointee.maxQuantizerAlpha = AVIF_QUANTIZER_LOSSLESS
        var output = avifRWData()
        defer { ipk_avifRWDataFree(&output) }
        let result = ipk_avifEncoderWrite(encoder, planes, &output)
        guard result == AVIF_RESULT_OK, let bytes = output.data else {
            throw ImageCodecError.encodingFailed("libavif: \(String(cString: ipk_avifResultToString(result)))")
        }
        return Data(bytes: bytes, count: output.size)
    }

    /// The bitmap's premultiplied RGBA into the image's YUV planes (and alpha plane, when it has transparency).
    private func convert(_ bitmap: Bitmap, into planes: UnsafeMutablePointer<avifImage>) throws {
        var rgb = avifRGBImage()
        ipk_avifRGBImageSetDefaults(&rgb, planes)
        rgb.format = AVIF_RGB_FORMAT_RGBA
        rgb.depth = 8
        rgb.alphaPremultiplied = AVIF_TRUE
        rgb.ignoreAlpha = bitmap.hasTransparency ? AVIF_FALSE : AVIF_TRUE
        let result = bitmap.withUnsafeBytes { pixels -> avifResult in
            // libavif only reads the pixels when converting to YUV; its field is not const.
            rgb.pixels = UnsafeMutablePointer(mutating: pixels.baseAddress?.assumingMemoryBound(to: UInt8.self))
            rgb.rowBytes = UInt32(bitmap.bytesPerRow)
            return ipk_avifImageRGBToYUV(planes, &rgb)
        }
        guard result == AVIF_RESULT_OK else {
            throw ImageCodecError.encodingFailed("libavif: \(String(cString: ipk_avifResultToString(result)))")
        }
    }
}
