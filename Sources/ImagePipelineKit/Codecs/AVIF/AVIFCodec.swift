import Foundation

/// AVIF through libavif (with dav1d or libaom underneath): stills and image sequences, with alpha, decoded
/// as their bytes arrive.
///
/// The container is parsed as soon as its boxes are in and each frame is decoded as soon as its samples
/// are, so an animation shows its first frame before its last has arrived. libavif has no reduced-size
/// decode: frames decode at full size and the scaler brings them to the target. Orientation comes from the
/// `irot`/`imir` boxes, or from EXIF when the file has neither. ``AVIFEncoder`` writes stills where libavif has
/// an AV1 encoder.
///
/// libavif is loaded the first time an AVIF is decoded, not at start-up. Where it is not installed, or is of
/// another version than the one this library was built with, decoding fails with
/// ``ImageCodecError/unsupported(_:)`` naming the library.
public struct AVIFCodec: ImageCodec {
    public init() {}
    public var imageType: ImageType { .avif }
    public var decoder: any ImageDecoder { AVIFDecoder() }
    /// ``AVIFEncoder``, or `nil` where libavif is missing or cannot encode (asking loads libavif once).
    public var encoder: (any ImageEncoder)? { AVIFEncoder.isAvailable ? AVIFEncoder() : nil }
    public var supportsAnimation: Bool { true }
}

/// Detects AVIF data and starts ``AVIFCodec`` sessions.
public struct AVIFDecoder: ImageDecoder {
    public init() {}

    /// An ISO base media `ftyp` box whose major or a compatible brand is `avif` or `avis`. A HEIC file
    /// (brands `heic`, `mif1`) is not AVIF: its images are HEVC, which libavif cannot decode.
    public func detect(_ data: Data, isComplete: Bool) -> ImageDetection {
        let head = [UInt8](data.prefix(Self.maximumFileTypeBoxLength))
        if head.count < 12 {
            // Too short to tell: wait, unless what is there already cannot be the start of an `ftyp` box.
            let typeBytes = head.dropFirst(4)
            let couldBeFileType = Array("ftyp".utf8).starts(with: typeBytes.prefix(4))
            return couldBeFileType && !isComplete ? .needMoreData : .noMatch
        }
        guard Array(head[4..<8]) == Array("ftyp".utf8) else { return .noMatch }
        let boxLength = head[0..<4].reduce(0) { $0 << 8 | Int($1) }
        guard boxLength >= 16, boxLength % 4 == 0 else { return .noMatch }
        // The major brand, then (after the minor version) the compatible brands, four bytes each.
        let brandOffsets = [8] + Array(stride(from: 16, to: min(boxLength, Self.maximumFileTypeBoxLength), by: 4))
        for offset in brandOffsets {
            guard offset + 4 <= head.count else { return isComplete ? .noMatch : .needMoreData }
            if Self.brands.contains(Array(head[offset..<(offset + 4)])) { return .match }
        }
        return .noMatch
    }

    public var supportsProgressiveDecoding: Bool { false }

    public func makeSession(configuration: DecoderConfiguration, expectedByteCount: Int?) -> any ImageDecodingSession {
        AVIFDecodingSession(configuration: configuration, expectedByteCount: expectedByteCount)
    }

    private static let brands: Set<[UInt8]> = [Array("avif".utf8), Array("avis".utf8)]
    /// Brands past this many bytes are not looked at: real files list a handful.
    private static let maximumFileTypeBoxLength = 256
}
