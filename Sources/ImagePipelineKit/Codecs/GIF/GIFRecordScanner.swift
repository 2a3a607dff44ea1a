/// Finds where each GIF record ends in the bytes received so far, without decoding anything.
///
/// giflib cannot suspend: a read that comes up short leaves its handle unusable. The session therefore asks
/// this scanner how far complete records reach and lets giflib read only that far. Scanning walks block
/// lengths, so it costs almost nothing next to LZW decoding.
struct GIFRecordScanner {
    enum Record: Equatable {
        case extension_
        case image
        case trailer
    }

    enum Scan: Equatable {
        /// The record starting at the given offset is incomplete.
        case needMoreData
        /// A complete record and the offset just past it.
        case record(Record, end: Int)
        /// A byte that starts no GIF record: giflib will report the error when it reads it.
        case unknown
    }

    /// Bytes taken by the header, logical screen descriptor and global colour table, or nil if not all in.
    static func headerLength(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 13 else { return nil }
        let flags = bytes[10]
        let table = flags & 0x80 != 0 ? 3 << (Int(flags & 0x07) + 1) : 0
        return bytes.count >= 13 + table ? 13 + table : nil
    }

    /// The record starting at `offset`.
    static func scan(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Scan {
        guard offset < bytes.count else { return .needMoreData }
        switch bytes[offset] {
        case 0x3B:
            return .record(.trailer, end: offset + 1)
        case 0x21:
            guard let end = subBlocksEnd(bytes, from: offset + 2) else { return .needMoreData }
            return .record(.extension_, end: end)
        case 0x2C:
            let descriptorEnd = offset + 10
            guard descriptorEnd <= bytes.count else { return .needMoreData }
            let flags = bytes[offset + 9]
            let table = flags & 0x80 != 0 ? 3 << (Int(flags & 0x07) + 1) : 0
            // The LZW minimum code size byte, then the data sub-blocks.
            guard let end = subBlocksEnd(bytes, from: descriptorEnd + table + 1) else { return .needMoreData }
            return .record(.image, end: end)
        default:
            return .unknown
        }
    }

    /// The offset after the zero-length block that ends the sub-blocks starting at `start`.
    private static func subBlocksEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        var cursor = start
        while cursor < bytes.count {
            let length = Int(bytes[cursor])
            if length == 0 { return cursor + 1 }
            cursor += 1 + length
        }
        return nil
    }
}
