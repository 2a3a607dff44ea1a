import Foundation
import ImagePipelineKit

/// Small files that declare huge images.
public enum DecodeBomb {
    /// A real 16x16 JPEG whose frame header claims `side` × `side`: under a kilobyte that a decoder must
    /// allocate `side² × 4` bytes for (libjpeg fills the rows the data does not cover). `variant` bytes after
    /// its end make each copy different, so that fetches of copies neither share a download nor a decode.
    public static func jpeg(side: Int, variant: Int = 0) throws -> Data {
        let pixels = try Bitmap(width: 16, height: 16) { pixels, bytesPerRow in memset(pixels, 0x80, bytesPerRow * 16) }
        var jpeg = try CodecCatalogue.shared.encode(ImageContainer(bitmap: pixels), as: .jpeg, quality: 0.8)
        guard let marker = jpeg.firstRange(of: Data([0xFF, 0xC0])) else { throw CocoaError(.fileReadCorruptFile) }
        // Frame header: FF C0, length (2), precision (1), height (2), width (2).
        let height = marker.lowerBound + 5
        jpeg.replaceSubrange(height..<(height + 4), with: [UInt8(side >> 8), UInt8(side & 0xFF), UInt8(side >> 8), UInt8(side & 0xFF)])
        return jpeg + Data(repeating: UInt8(truncatingIfNeeded: variant), count: variant + 1)
    }
}
