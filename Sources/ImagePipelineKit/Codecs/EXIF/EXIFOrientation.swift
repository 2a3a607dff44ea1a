import CEXIF
import Foundation

/// Reads the orientation tag (0x0112) of an EXIF block with libexif.
enum EXIFOrientation {
    /// Larger APP1 segments than this are not handed to libexif: a JPEG segment holds at most 64 KiB, and
    /// other containers (PNG eXIf, WebP EXIF) have no reason to carry more.
    static let maximumBlockLength = 1 << 16

    /// The orientation recorded in `block`, which starts with `Exif\0\0` (a JPEG APP1 payload) or directly
    /// with the TIFF header. ``ImageOrientation/up`` when the block or the tag is missing, malformed or out of
    /// range: a broken EXIF block never fails a decode, as in browsers.
    static func read(from block: UnsafeRawBufferPointer) -> ImageOrientation {
        guard let base = block.baseAddress, block.count >= 8, block.count <= maximumBlockLength else { return .up }
        guard let data = exif_data_new() else { return .up }
        defer { exif_data_unref(data) }
        exif_data_load_data(data, base.assumingMemoryBound(to: UInt8.self), UInt32(block.count))
        guard let ifd0 = data.pointee.ifd.0,
              let entry = exif_content_get_entry(ifd0, EXIF_TAG_ORIENTATION),
              entry.pointee.format == EXIF_FORMAT_SHORT, entry.pointee.components >= 1,
              entry.pointee.size >= 2, let bytes = entry.pointee.data
        else { return .up }
        let value = exif_get_short(bytes, exif_data_get_byte_order(data))
        return ImageOrientation(exifValue: Int(value))
    }

    /// ``read(from:)`` for a block in `Data`.
    static func read(from block: Data) -> ImageOrientation {
        block.withUnsafeBytes { read(from: $0) }
    }
}
