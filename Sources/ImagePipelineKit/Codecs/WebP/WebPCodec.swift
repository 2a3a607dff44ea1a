import CWebP
import Foundation

/// WebP through libwebp: lossy and lossless stills decoded incrementally, animations composited by
/// libwebp's animation decoder.
///
/// Stills render row by row as bytes arrive; an animation decodes once its RIFF container is complete (its
/// frames depend on each other). Output is premultiplied RGBA, as libwebp writes it (`MODE_rgbA`).
/// ``WebPEncoder`` writes stills, lossy or (at quality 1) lossless.
public struct WebPCodec: ImageCodec {
    public init() {}
    public var imageType: ImageType { .webp }
    public var decoder: any ImageDecoder { WebPDecoder() }
    public var encoder: (any ImageEncoder)? { WebPEncoder() }
    public var supportsAnimation: Bool { true }
}

/// Detects WebP data and starts ``WebPCodec`` sessions.
public struct WebPDecoder: ImageDecoder {
    public init() {}

    /// `RIFF` + size + `WEBP`.
    public func detect(_ data: Data, isComplete: Bool) -> ImageDetection {
        let signature: [UInt8?] = "RIFF".utf8.map(Optional.some) + [nil, nil, nil, nil] + "WEBP".utf8.map(Optional.some)
        return .matching(data, signatures: [signature], isComplete: isComplete)
    }

    public var supportsProgressiveDecoding: Bool { true }

    public func makeSession(configuration: DecoderConfiguration, expectedByteCount: Int?) -> any ImageDecodingSession {
        WebPDecodingSession(configuration: configuration)
    }
}

/// Encodes the first frame of a container as a still WebP with libwebp.
public struct WebPEncoder: ImageEncoder {
    public init() {}

    /// `quality` 0...1 sets libwebp's lossy quality (0...100); 1 exactly encodes losslessly.
    /// - Throws: ``ImageCodecError/encodingFailed(_:)`` when libwebp refuses.
    public func encode(_ image: ImageContainer, options: EncodingOptions, quality: Double) throws -> Data {
        let bitmap = image.bitmap
        let straight = bitmap.straightAlphaPixels()   // libwebp's encoder takes straight alpha
        var output: UnsafeMutablePointer<UInt8>?
        let stride = Int32(bitmap.width * 4)
        let length = quality >= 1
            ? WebPEncodeLosslessRGBA(straight, Int32(bitmap.width), Int32(bitmap.height), stride, &output)
            : WebPEncodeRGBA(straight, Int32(bitmap.width), Int32(bitmap.height), stride, Float(max(0, quality) * 100), &output)
        guard length > 0, let output else { throw ImageCodecError.encodingFailed("libwebp could not encode the image") }
        defer { WebPFree(output) }
        return Data(bytes: output, count: length)
    }
}
