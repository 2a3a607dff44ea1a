import Foundation
import Testing
@testable import ImagePipelineKit

@Suite("Bitmap and buffer pool")
struct BitmapTests {
    @Test("Rows are 64-byte aligned and sizeInMemory counts the padding")
    func alignment() throws {
        let bitmap = try makeBitmap(width: 17, height: 3) { _, _ in RGBA(r: 1, g: 2, b: 3, a: 255) }
        #expect(bitmap.bytesPerRow == 128)
        #expect(bitmap.sizeInMemory == 384)
        bitmap.withUnsafeBytes { #expect(Int(bitPattern: $0.baseAddress!) % 64 == 0) }
        #expect(bitmap.packedPixels().count == 17 * 3 * 4)
        #expect(!bitmap.hasTransparency)
    }

    // A pool of the tests' own: the shared one serves every test running in parallel.
    @Test("A released large buffer is reused by the next take of a similar size")
    func pooling() throws {
        let pool = BitmapBufferPool(capacity: 64 << 20)
        let first = pool.take(byteCount: 1024 * 512 * 4)
        let address = Int(bitPattern: first.pointer)
        pool.give(first)
        #expect(pool.retainedBytes >= 1024 * 512 * 4)
        let second = pool.take(byteCount: 1000 * 512 * 4)
        #expect(Int(bitPattern: second.pointer) == address)
        #expect(pool.retainedBytes == 0)
        pool.give(second)
        pool.drain()
        #expect(pool.retainedBytes == 0)
    }

    @Test("A thumbnail never takes a buffer more than twice its size")
    func noOversizedReuse() throws {
        let pool = BitmapBufferPool(capacity: 64 << 20)
        pool.give(pool.take(byteCount: 2048 * 2048 * 4))   // 16 MiB back into the pool
        let retained = pool.retainedBytes
        let thumbnail = pool.take(byteCount: 600 * 600 * 4)   // 1.4 MiB: must not take the 16 MiB block
        #expect(pool.retainedBytes == retained)
        pool.give(thumbnail)
        pool.drain()
    }

    @Test("Absurd sizes are refused before allocating")
    func refusesAbsurdSizes() {
        #expect(throws: ImageCodecError.self) { try Bitmap(width: 0, height: 10) { _, _ in } }
        #expect(throws: ImageCodecError.self) { try Bitmap(width: 1 << 21, height: 1 << 21) { _, _ in } }
    }

    @Test("An image container adds up frames, durations and memory")
    func container() throws {
        let a = try makeBitmap(width: 10, height: 10) { _, _ in RGBA(r: 0, g: 0, b: 0, a: 0) }
        let container = ImageContainer(frames: [ImageFrame(bitmap: a, duration: 0.1), ImageFrame(bitmap: a, duration: 0.25)], loopCount: 3)
        #expect(container.isAnimated && container.frameCount == 2 && container.loopCount == 3)
        #expect(abs(container.totalDuration - 0.35) < 1e-9)
        #expect(container.sizeInMemory == 2 * 64 * 10)
        #expect(ImageContainer(bitmap: a).isAnimated == false)
    }

    @Test("Decoding limits refuse bombs by declared size, frames and bytes")
    func limits() {
        let limits = DecodingLimits(maxPixels: 1_000_000, maxDimension: 2000, maxFrames: 10, maxBytes: 8 << 20)
        #expect(throws: ImageCodecError.limitExceeded(.dimension(PixelSize(width: 65500, height: 10)))) {
            try limits.check(sourceSize: PixelSize(width: 65500, height: 10))
        }
        #expect(throws: ImageCodecError.limitExceeded(.pixels(PixelSize(width: 1500, height: 1500)))) {
            try limits.check(sourceSize: PixelSize(width: 1500, height: 1500))
        }
        #expect(throws: ImageCodecError.limitExceeded(.frames(11))) {
            try limits.check(frameCount: 11, of: PixelSize(width: 1, height: 1))
        }
        #expect(throws: ImageCodecError.self) { try limits.check(frameCount: 10, of: PixelSize(width: 1000, height: 1000)) }
        #expect(throws: Never.self) { try limits.check(sourceSize: PixelSize(width: 1000, height: 1000)) }
    }
}

/// A codec for tests: claims data starting with "TEST" and decodes it to a 1x1 pixel of the 5th byte.
private struct TestCodec: ImageCodec {
    let imageType = ImageType(rawValue: "org.example.test")
    var decoder: any ImageDecoder { Decoder() }

    struct Decoder: ImageDecoder {
        func detect(_ data: Data, isComplete: Bool) -> ImageDetection {
            if data.count < 4 { return isComplete ? .noMatch : .needMoreData }
            return data.starts(with: Array("TEST".utf8)) ? .match : .noMatch
        }
        func makeSession(configuration: DecoderConfiguration, expectedByteCount: Int?) -> any ImageDecodingSession {
            Session()
        }
    }

    final class Session: ImageDecodingSession {
        var bytes = Data()
        var properties: ImageProperties?
        func append(_ data: Data) throws -> DecoderProgress {
            bytes.append(data)
            if bytes.count >= 5, properties == nil {
                properties = ImageProperties(type: ImageType(rawValue: "org.example.test"), dimensions: PixelSize(width: 1, height: 1))
                return .didLoadHeaders
            }
            return .didProgress
        }
        func finish() throws -> DecoderProgress {
            guard properties != nil else { throw ImageCodecError.truncated }
            return .didCompleteLoading
        }
        func render(_ mode: RenderMode, target: TargetSizing) throws -> ImageContainer? {
            let value = bytes[bytes.startIndex + 4]
            return ImageContainer(bitmap: try makeBitmap(width: 1, height: 1) { _, _ in RGBA(r: value, g: value, b: value, a: 255) }
                .rendered(orientation: .up, fullSize: PixelSize(width: 1, height: 1), target: target))
        }
    }
}

@Suite("Codec catalogue")
struct CodecCatalogueTests {
    @Test("A user codec registers, detects without magic numbers, decodes at a target, and can be removed")
    func userCodec() throws {
        let catalogue = CodecCatalogue()
        catalogue.setCodec(TestCodec())
        let type = ImageType(rawValue: "org.example.test")
        #expect(catalogue.imageTypes == [type])
        #expect(catalogue.properties(for: type) == [.decoding])
        #expect(catalogue.detectType(of: Data("TEST\u{7}".utf8), isComplete: true) == type)
        let decoded = try catalogue.decode(Data("TEST\u{40}".utf8), target: TargetSizing(dimensions: PixelSize(width: 4, height: 4), contentMode: .stretch))
        #expect(decoded.container.dimensions == PixelSize(width: 4, height: 4))
        #expect(decoded.container.bitmap.pixel(x: 3, y: 3) == RGBA(r: 64, g: 64, b: 64, a: 255))
        catalogue.replaceCodec(for: type) { _ in nil }
        #expect(catalogue.imageTypes.isEmpty)
        #expect(throws: ImageCodecError.unrecognizedFormat) { try catalogue.decode(Data("TEST\u{40}".utf8)) }
    }

    @Test("Empty data is truncated, unknown data unrecognized, and a missing encoder a typed error")
    func errors() throws {
        let catalogue = CodecCatalogue(codecs: CodecCatalogue.builtInCodecs)
        #expect(throws: ImageCodecError.truncated) { try catalogue.decode(Data()) }
        #expect(throws: ImageCodecError.unrecognizedFormat) { try catalogue.decode(Data("<html>404</html>".utf8)) }
        let bitmap = try makeBitmap(width: 1, height: 1) { _, _ in RGBA(r: 0, g: 0, b: 0, a: 255) }
        #expect(throws: ImageCodecError.self) { try catalogue.encode(ImageContainer(bitmap: bitmap), as: .bmp) }
    }

    @Test("Magic numbers identify the built-in formats")
    func magicNumbers() {
        #expect(ImageType.detect(magicNumbersOf: [0xFF, 0xD8, 0xFF, 0xE0]) == .jpeg)
        #expect(ImageType.detect(magicNumbersOf: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) == .png)
        #expect(ImageType.detect(magicNumbersOf: Array("GIF89a".utf8)) == .gif)
        #expect(ImageType.detect(magicNumbersOf: Array("RIFF\0\0\0\0WEBP".utf8)) == .webp)
        #expect(ImageType.detect(magicNumbersOf: [0xFF, 0xD8]) == nil)
        #expect(ImageType.detect(magicNumbersOf: Array("RIFF\0\0\0\0WAVE".utf8)) == nil)
        #expect(ImageType.detect(magicNumbersOf: Array("BM6\0".utf8)) == .bmp)
        #expect(ImageType.detect(magicNumbersOf: [0xFF, 0x0A, 0x00]) == .jxl)
        #expect(ImageType.detect(magicNumbersOf: [0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) == .jxl)
        #expect(ImageType.detect(magicNumbersOf: Array("\0\0\0\u{1C}ftypavif".utf8)) == .avif)
        #expect(ImageType.detect(magicNumbersOf: Array("\0\0\0\u{1C}ftypavis".utf8)) == .avif)
        #expect(ImageType.detect(magicNumbersOf: Array("\0\0\0\u{1C}ftypheic".utf8)) == nil)
        #expect(ImageType.detect(magicNumbersOf: Data([0x47, 0x49, 0x46, 0x38]).dropFirst(0)) == .gif, "any collection of bytes")
        #expect(ImageType.detect(magicNumbersOf: [UInt8]()) == nil)
    }
}
