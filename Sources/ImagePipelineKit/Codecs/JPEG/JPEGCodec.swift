import CImageCodecs
import Foundation

/// JPEG through libjpeg-turbo: baseline and progressive, incremental, DCT-scaled, with EXIF orientation.
///
/// - Decoding: every libjpeg process the library was built with (Huffman and arithmetic, baseline,
///   extended and progressive, 8-bit); grayscale, RGB, YCbCr, CMYK and YCCK (Adobe inverted or not) come out
///   as opaque RGBA. 12-bit and lossless files fail with ``ImageCodecError/unsupported(_:)``. Sessions render
///   baseline files row by row and progressive files scan by scan from partial data.
/// - Encoding: ``JPEGEncoder`` (quality, progressive, grayscale).
public struct JPEGCodec: ImageCodec {
    public init() {}
    public var imageType: ImageType { .jpeg }
    public var decoder: any ImageDecoder { JPEGDecoder() }
    public var encoder: (any ImageEncoder)? { JPEGEncoder() }
}

/// Encodes the first frame of a container as JPEG with libjpeg.
///
/// JPEG has no alpha: premultiplied pixels are written as they are, which is the image composited over black.
public struct JPEGEncoder: ImageEncoder {
    public init() {}

    /// Options: ``EncodingOptions/progressive`` writes a progressive file (libjpeg's standard scan script),
    /// ``EncodingOptions/grayscale`` a single-channel one. `quality` 0...1 maps to libjpeg's 1...100.
    /// - Throws: ``ImageCodecError/encodingFailed(_:)`` with libjpeg's message.
    public func encode(_ image: ImageContainer, options: EncodingOptions, quality: Double) throws -> Data {
        let bitmap = image.bitmap
        let jpegQuality = Int32(max(1, min(100, (quality * 100).rounded())))
        var message = [CChar](repeating: 0, count: 200)
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = bitmap.withUnsafeBytes { pixels in
            ipk_jpeg_encode_rgba(
                pixels.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt32(bitmap.width), UInt32(bitmap.height),
                bitmap.bytesPerRow, jpegQuality, options.contains(.progressive) ? 1 : 0,
                options.contains(.grayscale) ? 1 : 0, &output, &length, &message, message.count)
        }
        guard status == 0, let output else {
            throw ImageCodecError.encodingFailed(String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        defer { ipk_jpeg_free(output) }
        return Data(bytes: output, count: length)
    }
}
