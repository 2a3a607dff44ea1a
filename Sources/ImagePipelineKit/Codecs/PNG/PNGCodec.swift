import CImageCodecs
import Foundation

/// PNG through libpng: every bit depth and colour type, tRNS, 16-bit, Adam7, decoded incrementally.
///
/// Decoding yields premultiplied RGBA8 (16-bit samples rounded to 8, no gamma correction, as browsers show
/// PNGs); Adam7 files render pass by pass while loading. APNG files decode as their default image.
/// ``PNGEncoder`` writes RGBA, RGB or gray, optionally interlaced.
public struct PNGCodec: ImageCodec {
    public init() {}
    public var imageType: ImageType { .png }
    public var decoder: any ImageDecoder { PNGDecoder() }
    public var encoder: (any ImageEncoder)? { PNGEncoder() }
}

/// Detects PNG data and starts ``PNGCodec`` sessions.
public struct PNGDecoder: ImageDecoder {
    public init() {}

    /// The eight-byte PNG signature.
    public func detect(_ data: Data, isComplete: Bool) -> ImageDetection {
        .matching(data, signatures: [PNGHeader.signature], isComplete: isComplete)
    }

    /// Adam7 files render pass by pass; others row by row.
    public var supportsProgressiveDecoding: Bool { true }

    public func makeSession(configuration: DecoderConfiguration, expectedByteCount: Int?) -> any ImageDecodingSession {
        PNGDecodingSession(configuration: configuration)
    }
}

/// Encodes the first frame of a container as PNG with libpng.
public struct PNGEncoder: ImageEncoder {
    public init() {}

    /// Options: ``EncodingOptions/progressive`` interlaces (Adam7), ``EncodingOptions/noAlpha`` writes RGB,
    /// ``EncodingOptions/grayscale`` one gray channel. `quality` is ignored (PNG is lossless).
    /// - Throws: ``ImageCodecError/encodingFailed(_:)`` with libpng's message.
    public func encode(_ image: ImageContainer, options: EncodingOptions, quality: Double) throws -> Data {
        let bitmap = image.bitmap
        let channels: Int32 = options.contains(.grayscale) ? 1 : options.contains(.noAlpha) ? 3 : 4
        let straight = bitmap.straightAlphaPixels()   // PNG stores straight alpha
        var message = [CChar](repeating: 0, count: 200)
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = ipk_png_encode(
            straight, UInt32(bitmap.width), UInt32(bitmap.height), bitmap.width * 4, channels,
            options.contains(.progressive) ? 1 : 0, &output, &length, &message, message.count)
        guard status == 0, let output else {
            throw ImageCodecError.encodingFailed(String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        defer { ipk_png_free(output) }
        return Data(bytes: output, count: length)
    }
}

/// The fixed-position IHDR fields of a PNG, read before libpng sees the data so limits apply first.
struct PNGHeader {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    /// Signature (8) + IHDR length and type (8) + IHDR data (13).
    static let byteCount = 8 + 8 + 13

    var size: PixelSize
    var colorType: UInt8
    var isInterlaced: Bool

    /// Reads the header from the first ``byteCount`` bytes.
    /// - Throws: ``ImageCodecError/corrupt(_:)`` when the signature or the first chunk is not a valid IHDR.
    init(_ bytes: some Collection<UInt8>) throws(ImageCodecError) {
        let b = Array(bytes.prefix(Self.byteCount))
        guard b.count == Self.byteCount, Array(b[0..<8]) == Self.signature else { throw .corrupt("not a PNG signature") }
        guard b[8...11] == [0, 0, 0, 13], b[12...15].elementsEqual("IHDR".utf8) else {
            throw .corrupt("the first chunk is not a 13-byte IHDR")
        }
        func be32(_ at: Int) -> Int { Int(b[at]) << 24 | Int(b[at + 1]) << 16 | Int(b[at + 2]) << 8 | Int(b[at + 3]) }
        size = PixelSize(width: be32(16), height: be32(20))
        colorType = b[25]
        isInterlaced = b[28] == 1
    }
}
