import Foundation
import Testing
@testable import ImagePipelineKit

/// AVIF encoding through libavif, read back by our own AVIF decoder.
@Suite("AVIF encoding", .enabled(if: AVIFEncoder.isAvailable, "libavif with an AV1 encoder is not installed"))
struct AVIFEncoderTests {
    /// A smooth colour gradient; the left `transparentColumns` columns fully transparent.
    static func gradient(width: Int = 96, height: Int = 64, transparentColumns: Int = 0) throws -> Bitmap {
        try Bitmap(width: width, height: height) { pixels, stride in
            for y in 0..<height {
                let row = pixels.advanced(by: y * stride).assumingMemoryBound(to: UInt8.self)
                for x in 0..<width {
                    let opaque = x >= transparentColumns
                    let value = [UInt8(x * 255 / width), UInt8(y * 255 / height), 128, 255]
                    for channel in 0..<4 { row[x * 4 + channel] = opaque ? value[channel] : 0 }
                }
            }
        }
    }

    /// The largest difference of any sample between two bitmaps of one size.
    static func largestDifference(_ a: Bitmap, _ b: Bitmap) -> Int {
        var largest = 0
        for y in 0..<a.height {
            for x in 0..<a.width {
                let p = a.pixel(x: x, y: y), q = b.pixel(x: x, y: y)
                largest = max(largest, abs(Int(p.r) - Int(q.r)), abs(Int(p.g) - Int(q.g)), abs(Int(p.b) - Int(q.b)),
                              abs(Int(p.a) - Int(q.a)))
            }
        }
        return largest
    }

    @Test("An opaque still comes back at its size, close to the original, without an alpha plane")
    func opaque() throws {
        let original = try Self.gradient()
        let encoded = try AVIFEncoder().encode(ImageContainer(bitmap: original), options: [], quality: 0.9)
        #expect(CodecCatalogue.shared.detectType(of: encoded, isComplete: true) == .avif)
        let decoded = try CodecCatalogue.shared.decode(encoded)
        #expect(decoded.container.dimensions == original.size && !decoded.container.bitmap.hasTransparency)
        #expect(Self.largestDifference(decoded.container.bitmap, original) <= 12, "a smooth gradient survives 4:2:0 at quality 0.9")
    }

    @Test("Transparency is kept: transparent columns come back transparent, the rest opaque")
    func alpha() throws {
        let original = try Self.gradient(transparentColumns: 32)
        let encoded = try AVIFEncoder().encode(ImageContainer(bitmap: original), options: [], quality: 0.9)
        let decoded = try CodecCatalogue.shared.decode(encoded).container.bitmap
        #expect(decoded.pixel(x: 8, y: 30).a == 0 && decoded.pixel(x: 80, y: 30).a == 255)
    }

    @Test("Lower quality gives fewer bytes")
    func qualityOrdersSize() throws {
        let image = ImageContainer(bitmap: try Self.gradient(width: 160, height: 120))
        let small = try AVIFEncoder().encode(image, options: [], quality: 0.2)
        let large = try AVIFEncoder().encode(image, options: [], quality: 0.95)
        #expect(small.count < large.count, "\(small.count) vs \(large.count) bytes")
        #expect(AVIFCodec().properties.contains(.encoding))
    }
}
