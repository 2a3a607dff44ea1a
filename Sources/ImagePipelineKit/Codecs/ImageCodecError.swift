/// Why a decode or encode failed. Every case has a stable ``code`` and ``codeName`` (the CLI prints both).
public enum ImageCodecError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Which ceiling of ``DecodingLimits`` a file hit.
    public enum Limit: Hashable, Sendable {
        case pixels(PixelSize)
        case dimension(PixelSize)
        case frames(Int)
        case bytes(Int)
        /// The decode needs this many bytes and the decodes running at once may not hold that much more
        /// (``GlobalConfiguration/maxBytesForDecodesInFlight``).
        case decodeMemoryBudget(Int)
    }

    /// No registered codec recognises the data.
    case unrecognizedFormat
    /// The data ended before a first image could be produced.
    case truncated
    /// The data is not a valid image of its format; the message comes from the library.
    case corrupt(String)
    /// Valid, but uses a feature we do not decode (12-bit JPEG, say).
    case unsupported(String)
    /// Refused before allocating: the image is larger than the configured limits.
    case limitExceeded(Limit)
    /// The codec cannot encode (read-only) or the encoder failed.
    case encodingFailed(String)
    /// Stopped at a ``DecodeInterruption`` checkpoint: nobody wanted the result any more. Not a fault of the data.
    case interrupted

    /// A stable number for logs and the CLI's `errorCode`.
    public var code: Int {
        switch self {
        case .unrecognizedFormat: 1
        case .truncated: 2
        case .corrupt: 3
        case .unsupported: 4
        case .limitExceeded: 5
        case .encodingFailed: 6
        case .interrupted: 7
        }
    }

    /// A stable name for ``code``.
    public var codeName: String {
        switch self {
        case .unrecognizedFormat: "unrecognizedFormat"
        case .truncated: "truncated"
        case .corrupt: "corrupt"
        case .unsupported: "unsupported"
        case .limitExceeded: "limitExceeded"
        case .encodingFailed: "encodingFailed"
        case .interrupted: "interrupted"
        }
    }

    public var description: String {
        switch self {
        case .unrecognizedFormat: "unrecognized image format"
        case .truncated: "image data ends before the first image"
        case .corrupt(let message): "corrupt image: \(message)"
        case .unsupported(let message): "unsupported image: \(message)"
        case .limitExceeded(.pixels(let size)): "image of \(size) exceeds the pixel limit"
        case .limitExceeded(.dimension(let size)): "image of \(size) exceeds the dimension limit"
        case .limitExceeded(.frames(let count)): "animation of \(count) frames exceeds the frame limit"
        case .limitExceeded(.bytes(let bytes)): "decoding needs \(bytes) bytes, over the byte limit"
        case .limitExceeded(.decodeMemoryBudget(let bytes)):
            "decoding needs \(bytes) bytes, more than the decodes in flight may hold together"
        case .encodingFailed(let message): "encoding failed: \(message)"
        case .interrupted: "decoding stopped: its result is no longer wanted"
        }
    }
}
