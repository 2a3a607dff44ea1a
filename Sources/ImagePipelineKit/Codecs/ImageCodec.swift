import Foundation

/// What a decoder makes of the first bytes of some data (TIP's `TIPImageDecoderDetectionResult`).
public enum ImageDetection: Sendable {
    case noMatch
    /// Could be this format; more bytes are needed to tell.
    case needMoreData
    case match
}

extension ImageDetection {
    /// Detection by signature: `.match` when `data` starts with one of `signatures` (`nil` bytes match
    /// anything), `.needMoreData` while it is a prefix of one and more bytes may come, else `.noMatch`.
    public static func matching(_ data: Data, signatures: [[UInt8?]], isComplete: Bool) -> ImageDetection {
        let head = Array(data.prefix(signatures.map(\.count).max() ?? 0))
        var couldMatch = false
        for signature in signatures {
            let compared = min(head.count, signature.count)
            guard zip(head.prefix(compared), signature.prefix(compared)).allSatisfy({ $1 == nil || $0 == $1 }) else { continue }
            if head.count >= signature.count { return .match }
            couldMatch = true
        }
        return couldMatch && !isComplete ? .needMoreData : .noMatch
    }
}

/// What appending bytes to a decoding session achieved (TIP's `TIPImageDecoderAppendResult`).
public enum DecoderProgress: Int, Sendable, Comparable {
    /// Bytes were taken, nothing new can be shown yet.
    case didProgress
    /// The headers are in: ``ImageDecodingSession/properties`` is set.
    case didLoadHeaders
    /// A new frame, progressive scan or pass can be rendered.
    case didLoadFrame
    /// The whole image is in; ``RenderMode/completeImage`` renders it.
    case didCompleteLoading

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// How much a session renders (TIP's `TIPImageDecoderRenderMode`).
public enum RenderMode: Sendable {
    /// Whatever has arrived, even an incomplete scan or frame.
    case anyProgress
    /// Only the last complete frame, scan or pass.
    case fullFrameProgress
    /// Only the finished image; `nil` until loading completed.
    case completeImage
}

/// What a decoder learned from an image's headers.
public struct ImageProperties: Hashable, Sendable {
    public var type: ImageType
    /// Dimensions as displayed: after EXIF orientation when the configuration applies it.
    public var dimensions: PixelSize
    /// Progressive JPEG or interlaced (Adam7) PNG/GIF.
    public var isProgressive: Bool
    public var isAnimated: Bool
    /// Frames known so far (final once loading completed).
    public var frameCount: Int
    public var hasAlpha: Bool
    /// EXIF orientation found in the file (``ImageOrientation/up`` when absent or invalid).
    public var orientation: ImageOrientation
    /// Animation loop count, 0 = forever.
    public var loopCount: Int

    public init(
        type: ImageType, dimensions: PixelSize, isProgressive: Bool = false, isAnimated: Bool = false,
        frameCount: Int = 1, hasAlpha: Bool = false, orientation: ImageOrientation = .up, loopCount: Int = 0
    ) {
        self.type = type
        self.dimensions = dimensions
        self.isProgressive = isProgressive
        self.isAnimated = isAnimated
        self.frameCount = frameCount
        self.hasAlpha = hasAlpha
        self.orientation = orientation
        self.loopCount = loopCount
    }
}

/// A finished one-shot decode: the pixels and what the headers said.
public struct DecodedImage: Sendable {
    public var container: ImageContainer
    public var properties: ImageProperties

    public init(container: ImageContainer, properties: ImageProperties) {
        self.container = container
        self.properties = properties
    }
}

/// Incremental decoding of one image, fed bytes as they arrive (TIP's decoder context).
///
/// A session is not thread-safe: use it from one queue at a time (the fetch operation's queue).
public protocol ImageDecodingSession: AnyObject {
    /// Set once the headers are loaded.
    var properties: ImageProperties? { get }

    /// Takes the next bytes. Chunks may be split anywhere, even inside a marker.
    ///
    /// A session may return ``DecoderProgress/didLoadHeaders`` as soon as its headers are in and decode the
    /// rest of the bytes it was given on the next append, on ``finish()`` or before a render, so that a caller
    /// can decide from the headers alone whether to go on.
    /// - Throws: ``ImageCodecError`` for corrupt data or data over the configured limits.
    func append(_ data: Data) throws -> DecoderProgress

    /// Says no more bytes will come. A session whose data stopped early either completes with what it
    /// has (a partial image, where the format allows) or throws ``ImageCodecError/truncated``.
    func finish() throws -> DecoderProgress

    /// Renders what has been decoded, at `target`, or `nil` when `mode` has nothing to show yet.
    /// The result has exactly `target.scaledSize(of: properties.dimensions)`, or, for an animation (the result
    /// has more than one frame, or `properties.isAnimated`), `target.scaledSize(ofAnimation: properties.dimensions)`.
    func render(_ mode: RenderMode, target: TargetSizing) throws -> ImageContainer?
}

/// Reads one image format (TIP's `TIPImageDecoder`).
public protocol ImageDecoder: Sendable {
    /// Whether `data` looks like this format. `isComplete` says that no more bytes will follow.
    func detect(_ data: Data, isComplete: Bool) -> ImageDetection

    /// Whether sessions of this decoder produce intermediate renders (progressive scans, passes).
    var supportsProgressiveDecoding: Bool { get }

    /// Starts an incremental decode.
    func makeSession(configuration: DecoderConfiguration, expectedByteCount: Int?) -> any ImageDecodingSession

    /// Decodes complete data in one go, at `target`.
    func decode(_ data: Data, target: TargetSizing, configuration: DecoderConfiguration) throws -> DecodedImage
}

extension ImageDecoder {
    public var supportsProgressiveDecoding: Bool { false }

    /// How many bytes the default one-shot decode appends between checkpoints (64 KiB: a millisecond or two of
    /// PNG decoding).
    public var interruptibleSliceBytes: Int { 64 << 10 }

    /// The default one-shot decode: one session, all bytes, finish, render the complete image. The bytes go in
    /// slices of ``interruptibleSliceBytes`` with a ``DecodeInterruption/checkpoint()`` before each, so that a
    /// session that decodes as it reads (PNG's) stops partway through when nobody wants the image any more.
    public func decode(_ data: Data, target: TargetSizing, configuration: DecoderConfiguration) throws -> DecodedImage {
        let session = makeSession(configuration: configuration, expectedByteCount: data.count)
        try session.appendInterruptibly(data, from: data.startIndex, sliceBytes: interruptibleSliceBytes)
        _ = try session.finish()
        try DecodeInterruption.checkpoint()
        guard let container = try session.render(.completeImage, target: target)
            ?? session.render(.anyProgress, target: target),
            let properties = session.properties
        else { throw ImageCodecError.truncated }
        return DecodedImage(container: container, properties: properties)
    }
}

extension ImageDecodingSession {
    /// Appends `data` from `start` on (at least once), in slices of `sliceBytes` with a
    /// ``DecodeInterruption/checkpoint()`` before each: a session that decodes as it reads then stops between
    /// slices when nobody wants the image any more. Each slice is a copy (indices from 0, as a session's own
    /// reads expect), except when one slice is all of `data`.
    func appendInterruptibly(_ data: Data, from start: Data.Index, sliceBytes: Int) throws {
        var offset = start
        repeat {
            try DecodeInterruption.checkpoint()
            let end = data.index(offset, offsetBy: sliceBytes, limitedBy: data.endIndex) ?? data.endIndex
            _ = try append(offset == data.startIndex && end == data.endIndex ? data : Data(data[offset..<end]))
            offset = end
        } while offset < data.endIndex
    }
}

/// Options for ``ImageEncoder`` (TIP's `TIPImageEncodingOptions`).
public struct EncodingOptions: OptionSet, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Progressive JPEG, interlaced PNG.
    public static let progressive = EncodingOptions(rawValue: 1 << 0)
    /// Drop the alpha channel.
    public static let noAlpha = EncodingOptions(rawValue: 1 << 1)
    public static let grayscale = EncodingOptions(rawValue: 1 << 2)
    public static let indexedColorPalette = EncodingOptions(rawValue: 1 << 3)
}

/// Writes one image format (TIP's `TIPImageEncoder`).
public protocol ImageEncoder: Sendable {
    /// Encodes `image`. `quality` runs from 0 (smallest) to 1 (best); lossless formats ignore it.
    func encode(_ image: ImageContainer, options: EncodingOptions, quality: Double) throws -> Data
}

/// What a codec can do (TIP's `TIPImageCodecProperties`).
public struct CodecProperties: OptionSet, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let decoding = CodecProperties(rawValue: 1)
    public static let encoding = CodecProperties(rawValue: 2)
    public static let animation = CodecProperties(rawValue: 4)
    public static let progressiveLoading = CodecProperties(rawValue: 8)
}

/// A decoder plus an optional encoder for one image type (TIP's `TIPImageCodec`).
public protocol ImageCodec: Sendable {
    var imageType: ImageType { get }
    var decoder: any ImageDecoder { get }
    /// `nil` for read-only formats.
    var encoder: (any ImageEncoder)? { get }
    /// Whether the format can hold animations.
    var supportsAnimation: Bool { get }
}

extension ImageCodec {
    public var encoder: (any ImageEncoder)? { nil }
    public var supportsAnimation: Bool { false }

    public var properties: CodecProperties {
        var properties: CodecProperties = .decoding
        if encoder != nil { properties.insert(.encoding) }
        if supportsAnimation { properties.insert(.animation) }
        if decoder.supportsProgressiveDecoding { properties.insert(.progressiveLoading) }
        return properties
    }
}
