import Foundation

/// JPEG XL through libjxl: stills, progressive passes and animations, with alpha, decoded as their bytes
/// arrive.
///
/// A render before the end shows the passes decoded so far (libjxl's progressive flush), the way
/// progressive JPEG shows its scans; an animation shows its first frame until it is complete. libjxl has no
/// reduced-size decode in this version: frames decode at full size and the scaler brings them to the target.
/// The codestream's orientation is reported and applied like EXIF orientation in the other formats.
/// Decode-only: there is no encoder.
///
/// libjxl is loaded the first time a JPEG XL is decoded, not at start-up. Where it is not installed, or is of
/// another version than the one this library was built with, decoding fails with
/// ``ImageCodecError/unsupported(_:)`` naming the library.
public struct JPEGXLCodec: ImageCodec {
    public init() {}
    public var imageType: ImageType { .jxl }
    public var decoder: any ImageDecoder { JPEGXLDecoder() }
    public var supportsAnimation: Bool { true }
}

/// Detects JPEG XL data and starts ``JPEGXLCodec`` sessions.
public struct JPEGXLDecoder: ImageDecoder {
    public init() {}

    /// The bare codestream's `FF 0A`, or the 12-byte signature box of the ISO base media container.
    public func detect(_ data: Data, isComplete: Bool) -> ImageDetection {
        .matching(data, signatures: Self.signatures, isComplete: isComplete)
    }

    public var supportsProgressiveDecoding: Bool { true }

    public func makeSession(configuration: DecoderConfiguration, expectedByteCount: Int?) -> any ImageDecodingSession {
        JPEGXLDecodingSession(configuration: configuration)
    }

    private static let signatures: [[UInt8?]] = [
        [0xFF, 0x0A],
        [0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A],
    ]
}
