import Foundation

/// Whether a file's bytes run to the end its format defines, judged on the structure alone (nothing is
/// decoded, nothing copied: it runs on the download coordinator's queue, which every download shares).
///
/// A response without `Content-Length` ends when the server closes the connection, so a connection cut
/// halfway looks exactly like a finished one. The format then says whether the image is all there:
/// JPEG's end-of-image marker, PNG's `IEND` chunk, GIF's trailer, WebP's RIFF size, and the box sizes of
/// ISO base media files (AVIF, HEIF, a JPEG XL container).
public enum ImageCompleteness: Sendable {
    /// `true` when the bytes end where the format says they do, `false` when they stop short, `nil` when the
    /// format is not one of those above (or cannot say, as a bare JPEG XL codestream).
    public static func isComplete(_ data: Data) -> Bool? {
        let head = [UInt8](data.prefix(16))
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return data.withUnsafeBytes { jpegIsComplete($0) } }
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return data.withUnsafeBytes { pngIsComplete($0) } }
        if head.starts(with: Array("GIF8".utf8)) { return data.withUnsafeBytes { gifIsComplete($0) } }
        if head.count >= 12, head.starts(with: Array("RIFF".utf8)), Array(head[8..<12]) == Array("WEBP".utf8) {
            let size = Int(head[4]) | Int(head[5]) << 8 | Int(head[6]) << 16 | Int(head[7]) << 24
            return data.count >= size + 8
        }
        if head.count >= 8, Array(head[4..<8]) == Array("ftyp".utf8) || isJPEGXLContainer(head) {
            return data.withUnsafeBytes { boxesAreComplete($0) }
        }
        return nil
    }

    // MARK: - JPEG

    /// Walks the markers: segments carry their length, entropy-coded data runs until a marker that is neither
    /// a stuffed `FF 00` nor a restart; complete once the end-of-image marker is reached.
    private static func jpegIsComplete(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 2
        var inScan = false
        while index + 1 < bytes.count {
            if inScan {
                // Inside entropy-coded data: only FF followed by a marker ends it.
                guard bytes[index] == 0xFF else { index += 1; continue }
                let next = bytes[index + 1]
                if next == 0x00 || (0xD0...0xD7).contains(next) || next == 0xFF { index += next == 0xFF ? 1 : 2; continue }
                inScan = false
                continue
            }
            guard bytes[index] == 0xFF else { return false }    // garbage where a marker belongs
            let marker = bytes[index + 1]
            switch marker {
            case 0xFF: index += 1                               // fill byte
            case 0xD9: return true                              // end of image
            case 0x01, 0xD0...0xD7: index += 2                  // markers without a length
            default:
                guard index + 3 < bytes.count else { return false }
                let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
                guard length >= 2 else { return false }
                index += 2 + length
                if marker == 0xDA { inScan = true }             // start of scan: entropy data follows
            }
        }
        return false
    }

    // MARK: - PNG

    /// Walks the chunks (length, type, data, CRC) until `IEND` has all of its bytes.
    private static func pngIsComplete(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 8
        while index + 8 <= bytes.count {
            let length = Int(bytes[index]) << 24 | Int(bytes[index + 1]) << 16 | Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            let type = bytes[(index + 4)..<(index + 8)]
            let end = index + 12 + length
            if Array(type) == Array("IEND".utf8) { return end <= bytes.count }
            index = end
        }
        return false
    }

    // MARK: - GIF

    /// Walks the blocks (extensions and images, each a run of sub-blocks) until the trailer byte.
    private static func gifIsComplete(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 13 else { return false }
        var index = 13
        if bytes[10] & 0x80 != 0 { index += 3 << (Int(bytes[10] & 0x07) + 1) }     // global color table
        while index < bytes.count {
            switch bytes[index] {
            case 0x3B:
                return true
            case 0x21:                                      // extension: label, then sub-blocks
                index += 2
            case 0x2C:                                      // image: descriptor, local color table, LZW code size
                guard index + 10 <= bytes.count else { return false }
                let packed = bytes[index + 9]
                index += 10
                if packed & 0x80 != 0 { index += 3 << (Int(packed & 0x07) + 1) }
                index += 1
            default:
                return false
            }
            guard let end = endOfSubBlocks(bytes, from: index) else { return false }
            index = end
        }
        return false
    }

    /// The index after the zero-length block that ends the sub-blocks starting at `index`.
    private static func endOfSubBlocks(_ bytes: UnsafeRawBufferPointer, from index: Int) -> Int? {
        var index = index
        while index < bytes.count {
            let size = Int(bytes[index])
            index += 1 + size
            if size == 0 { return index }
        }
        return nil
    }

    // MARK: - ISO base media (AVIF, HEIF, JPEG XL container)

    private static func isJPEGXLContainer(_ bytes: [UInt8]) -> Bool {
        bytes.starts(with: [0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A])
    }

    /// Whether the top-level boxes tile the bytes exactly (a size of 0 means "to the end of the file").
    private static func boxesAreComplete(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while index < bytes.count {
            guard index + 8 <= bytes.count else { return false }
            var size = bytes[index..<(index + 4)].reduce(0) { $0 << 8 | Int($1) }
            if size == 0 { return true }
            if size == 1 {
                guard index + 16 <= bytes.count else { return false }
                let large = bytes[(index + 8)..<(index + 16)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                guard large <= UInt64(Int.max) else { return false }
                size = Int(large)
                guard size >= 16 else { return false }
            } else if size < 8 {
                return false
            }
            guard size <= bytes.count - index else { return false }
            index += size
        }
        return true
    }
}
