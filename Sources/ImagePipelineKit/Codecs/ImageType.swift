/// An image format, named by its uniform type identifier as in TIP (`public.jpeg`, `public.png`, …).
public struct ImageType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let jpeg = ImageType(rawValue: "public.jpeg")
    public static let png = ImageType(rawValue: "public.png")
    public static let gif = ImageType(rawValue: "com.compuserve.gif")
    public static let webp = ImageType(rawValue: "org.webmproject.webp")
    public static let bmp = ImageType(rawValue: "com.microsoft.bmp")
    /// AV1 Image File Format: stills (`avif` brand) and image sequences (`avis`).
    public static let avif = ImageType(rawValue: "public.avif")
    /// JPEG XL, as a bare codestream or in its ISO base media container.
    public static let jxl = ImageType(rawValue: "public.jpeg-xl")

    /// A short lowercase name for output (`jpeg`, `png`, …); the raw identifier for unknown types.
    public var description: String {
        switch self {
        case .jpeg: "jpeg"
        case .png: "png"
        case .gif: "gif"
        case .webp: "webp"
        case .bmp: "bmp"
        case .avif: "avif"
        case .jxl: "jxl"
        default: rawValue
        }
    }

    /// The media type HTTP names this format by (`image/jpeg`, …), or `nil` for a type without a known one.
    public var mimeType: String? {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .gif: "image/gif"
        case .webp: "image/webp"
        case .bmp: "image/bmp"
        case .avif: "image/avif"
        case .jxl: "image/jxl"
        default: nil
        }
    }

    /// The type the first bytes announce (TIP's `TIPDetectImageTypeViaMagicNumbers`), or `nil`.
    public static func detect<Bytes: Collection<UInt8>>(magicNumbersOf bytes: Bytes) -> ImageType? {
        // The first twelve bytes go to the stack and the signatures are made once: a server asks this of every
        // cached answer it sends.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 12) { buffer in
            var count = 0
            for byte in bytes.prefix(12) {
                buffer[count] = byte
                count += 1
            }
            return detect(head: UnsafeBufferPointer(rebasing: buffer[..<count]))
        }
    }

    private static func detect(head: UnsafeBufferPointer<UInt8>) -> ImageType? {
        func starts(_ signature: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + signature.count && head[offset...].starts(with: signature)
        }
        if starts(Signature.jpeg) { return .jpeg }
        if starts(Signature.png) { return .png }
        if starts(Signature.gif) { return .gif }
        if starts(Signature.riff), starts(Signature.webp, at: 8) { return .webp }
        if starts(Signature.bmp) { return .bmp }
        // JPEG XL: the bare codestream's two bytes, or the container's signature box.
        if starts(Signature.jxlCodestream) || starts(Signature.jxlContainer) { return .jxl }
        // An ISO base media file whose major brand is AVIF (a compatible brand needs the whole `ftyp` box,
        // which AVIFDecoder reads).
        if starts(Signature.ftyp, at: 4), starts(Signature.avif, at: 8) || starts(Signature.avis, at: 8) { return .avif }
        return nil
    }

    private enum Signature {
        static let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF]
        static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        static let gif = Array("GIF".utf8)
        static let riff = Array("RIFF".utf8)
        static let webp = Array("WEBP".utf8)
        static let bmp = Array("BM".utf8)
        static let jxlCodestream: [UInt8] = [0xFF, 0x0A]
        static let jxlContainer: [UInt8] = [0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]
        static let ftyp = Array("ftyp".utf8)
        static let avif = Array("avif".utf8)
        static let avis = Array("avis".utf8)
    }
}
