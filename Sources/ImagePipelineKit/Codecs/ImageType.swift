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
        let head = Array(bytes.prefix(12))
        func starts(_ magic: [UInt8]) -> Bool { head.count >= magic.count && head.starts(with: magic) }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts([0x47, 0x49, 0x46]) { return .gif }
        if head.count >= 12, starts([0x52, 0x49, 0x46, 0x46]), Array(head[8..<12]) == [0x57, 0x45, 0x42, 0x50] {
            return .webp
        }
        if starts([0x42, 0x4D]) { return .bmp }
        // JPEG XL: the bare codestream's two bytes, or the container's signature box.
        if starts([0xFF, 0x0A]) || starts([0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) {
            return .jxl
        }
        // An ISO base media file whose major brand is AVIF (a compatible brand needs the whole `ftyp` box,
        // which AVIFDecoder reads).
        if head.count >= 12, Array(head[4..<8]) == Array("ftyp".utf8),
           ["avif", "avis"].contains(String(decoding: head[8..<12], as: UTF8.self)) {
            return .avif
        }
        return nil
    }
}
