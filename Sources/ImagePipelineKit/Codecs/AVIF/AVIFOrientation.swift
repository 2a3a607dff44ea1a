import CAVIF

/// The orientation an AVIF asks for, as an EXIF orientation.
///
/// HEIF's transforms are a rotation (`irot`, quarter turns anti-clockwise) followed by a mirror (`imir`:
/// mode 0 exchanges top and bottom, mode 1 left and right); libavif reports them and leaves the pixels
/// alone. When a file has neither, an EXIF orientation tag counts instead, as browsers that honour EXIF in
/// other formats do. A malformed EXIF block is ignored, never an error.
enum AVIFOrientation {
    static func of(_ image: avifImage) -> ImageOrientation {
        let rotates = image.transformFlags & AVIF_TRANSFORM_IROT.rawValue != 0
        let mirrors = image.transformFlags & AVIF_TRANSFORM_IMIR.rawValue != 0
        if rotates || mirrors {
            return fromTransforms(quarterTurnsAntiClockwise: rotates ? Int(image.irot.angle & 3) : 0,
                                  mirrorMode: mirrors ? Int(image.imir.mode) : nil)
        }
        guard let exif = image.exif.data, image.exif.size > 0 else { return .up }
        return fromEXIF(UnsafeRawBufferPointer(start: exif, count: image.exif.size))
    }

    /// The EXIF orientation equal to rotating by `quarterTurnsAntiClockwise` and then mirroring.
    static func fromTransforms(quarterTurnsAntiClockwise turns: Int, mirrorMode: Int?) -> ImageOrientation {
        // Rows: quarter turns 0...3; columns: no mirror, top-bottom (mode 0), left-right (mode 1).
        let table: [[ImageOrientation]] = [
            [.up, .downMirrored, .upMirrored],
            [.left, .leftMirrored, .rightMirrored],
            [.down, .upMirrored, .downMirrored],
            [.right, .rightMirrored, .leftMirrored],
        ]
        let column = switch mirrorMode { case nil: 0; case 0: 1; default: 2 }
        return table[turns & 3][column]
    }

    /// The orientation tag of an AVIF's EXIF item. libavif hands over the payload after the item's 4-byte
    /// header offset; the TIFF header is looked for in the first bytes so either layout reads.
    private static func fromEXIF(_ block: UnsafeRawBufferPointer) -> ImageOrientation {
        let littleEndian: [UInt8] = [0x49, 0x49, 0x2A, 0x00], bigEndian: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A]
        for start in 0..<min(16, max(0, block.count - 8)) {
            let magic = Array(block[start..<(start + 4)])
            if magic == littleEndian || magic == bigEndian {
                return EXIFOrientation.read(from: UnsafeRawBufferPointer(rebasing: block[start...]))
            }
        }
        return .up
    }
}
