import Foundation
import Testing
@testable import ImagePipelineKit

/// The premultiplied RGBA bytes of a bitmap, packed, as the golden files hash them.
func packedDigest(_ bitmap: Bitmap) -> String { SHA1.hexDigest(of: bitmap.packedPixels()) }

@Suite("PNG against Pillow (PngSuite)", .enabled(if: Corpus.isAvailable, Corpus.missingMessage))
struct PNGSuiteTests {
    /// `name sha1` lines made by scripts/golden/pngsuite_golden.py with Pillow.
    static let golden: [(String, String)] = {
        guard let text = try? String(contentsOf: Fixtures.url("pngsuite-golden.txt"), encoding: .utf8) else { return [] }
        return text.split(separator: "\n").map { line in
            let parts = line.split(separator: " ")
            return (String(parts[0]), String(parts[1]))
        }
    }()

    @Test("Every valid PngSuite file decodes to exactly Pillow's pixels", arguments: golden.map(\.0))
    func matchesPillow(_ name: String) throws {
        let expected = try #require(Self.golden.first { $0.0 == name }?.1)
        let decoded = try CodecCatalogue.shared.decode(Corpus.data("conformance/png/pngsuite/\(name)"))
        #expect(decoded.properties.type == .png)
        #expect(packedDigest(decoded.container.bitmap) == expected, "\(name)")
    }

    @Test("The golden list covers the whole suite")
    func coverage() {
        let files = Corpus.files(under: "conformance/png/pngsuite", extensions: ["png"])
            .filter { !($0 as NSString).lastPathComponent.hasPrefix("x") && !$0.hasSuffix("PngSuite.png") }
        #expect(Self.golden.count >= files.count - 1 && Self.golden.count > 150)
    }

    @Test("Incremental sessions in 1, 7 and random chunks end with the one-shot pixels", arguments: [
        "basi0g01.png", "basi3p02.png", "basn6a16.png", "basi6a16.png", "tbwn3p08.png", "s39i3p04.png",
    ])
    func incremental(_ name: String) throws {
        let data = try Corpus.data("conformance/png/pngsuite/\(name)")
        let oneShot = try CodecCatalogue.shared.decode(data).container.bitmap
        var generator = SystemRandomNumberGenerator()
        for chunking in ["1", "7", "random"] {
            let session = PNGDecoder().makeSession(configuration: .default, expectedByteCount: nil)
            var offset = 0
            while offset < data.count {
                let size = chunking == "1" ? 1 : chunking == "7" ? 7 : Int.random(in: 1...300, using: &generator)
                _ = try session.append(data[offset..<min(offset + size, data.count)])
                offset += size
            }
            #expect(try session.finish() == .didCompleteLoading)
            let final = try #require(try session.render(.completeImage, target: .original))
            #expect(final.bitmap.packedPixels() == oneShot.packedPixels(), "\(name) \(chunking)")
        }
    }
}

@Suite("PNG generated fixtures")
struct PNGGeneratedTests {
    /// A pattern with every kind of alpha: opaque, transparent and partial.
    static func pattern(width: Int, height: Int) throws -> Bitmap {
        try Bitmap(width: width, height: height) { pixels, stride in
            for y in 0..<height {
                let row = (pixels + y * stride).assumingMemoryBound(to: UInt8.self)
                for x in 0..<width {
                    let alpha = UInt8((x * 255) / max(1, width - 1))
                    let straight = [UInt8(x & 0xFF), UInt8(y & 0xFF), UInt8((x ^ y) & 0xFF)]
                    for c in 0..<3 { row[x * 4 + c] = UInt8((Int(straight[c]) * Int(alpha) + 127) / 255) }
                    row[x * 4 + 3] = alpha
                }
            }
        }
    }

    static func encode(_ bitmap: Bitmap, _ options: EncodingOptions = []) throws -> Data {
        try PNGEncoder().encode(ImageContainer(bitmap: bitmap), options: options, quality: 1)
    }

    @Test("Encode then decode: opaque and transparent pixels survive exactly, partial alpha within rounding")
    func roundTrip() throws {
        let source = try Self.pattern(width: 97, height: 41)
        for options in [EncodingOptions(), .progressive] {
            let decoded = try CodecCatalogue.shared.decode(Self.encode(source, options))
            #expect(decoded.properties.isProgressive == options.contains(.progressive))
            let a = source.packedPixels(), b = decoded.container.bitmap.packedPixels()
            #expect(a.count == b.count)
            // Premultiplied → straight → premultiplied is exact whenever alpha is 0 or 255 and within 1 otherwise.
            var worst = 0
            for i in a.indices { worst = max(worst, abs(Int(a[i]) - Int(b[i]))) }
            #expect(worst <= 1)
            #expect(source.pixel(x: 96, y: 3) == decoded.container.bitmap.pixel(x: 96, y: 3))
            #expect(decoded.container.bitmap.pixel(x: 0, y: 3) == RGBA(r: 0, g: 0, b: 0, a: 0))
        }
        let gray = try CodecCatalogue.shared.decode(Self.encode(source, .grayscale)).container.bitmap.pixel(x: 50, y: 20)
        #expect(gray.r == gray.g && gray.g == gray.b && gray.a == 255)
    }

    @Test("Adam7 renders pass by pass at full size before the file is complete")
    func adam7Passes() throws {
        let data = try Self.encode(Self.pattern(width: 64, height: 64), .progressive)
        let session = PNGDecoder().makeSession(configuration: .default, expectedByteCount: nil)
        var frames = 0
        for offset in stride(from: 0, to: data.count, by: 97) {
            if try session.append(data[offset..<min(offset + 97, data.count)]) == .didLoadFrame {
                frames += 1
                let preview = try #require(try session.render(.fullFrameProgress, target: .original))
                #expect(preview.dimensions == PixelSize(width: 64, height: 64))
            }
        }
        #expect(frames >= 3)
    }

    @Test("Cut at every length, a PNG gives `truncated` (or no format), never a crash")
    func truncation() throws {
        let data = try Self.encode(Self.pattern(width: 20, height: 12))
        for length in 0..<data.count {
            #expect {
                try CodecCatalogue.shared.decode(data.prefix(length))
            } throws: { error in
                guard let error = error as? ImageCodecError else { return false }
                return error == .truncated || error == .unrecognizedFormat || error.code == 3
            }
        }
    }

    @Test("IHDR declaring 100000x100000 is refused by the limits before libpng or a canvas allocates")
    func dimensionBomb() throws {
        var data = try Self.encode(Self.pattern(width: 4, height: 4))
        data.replaceSubrange(16..<24, with: [0x00, 0x01, 0x86, 0xA0, 0x00, 0x01, 0x86, 0xA0])
        #expect(throws: ImageCodecError.limitExceeded(.dimension(PixelSize(width: 100_000, height: 100_000)))) {
            try CodecCatalogue.shared.decode(data)
        }
        let small = DecoderConfiguration(limits: DecodingLimits(maxPixels: 10))
        #expect(throws: ImageCodecError.limitExceeded(.pixels(PixelSize(width: 4, height: 4)))) {
            try CodecCatalogue.shared.decode(Self.encode(Self.pattern(width: 4, height: 4)), configuration: small)
        }
    }

    @Test("A broken CRC on IDAT is corrupt")
    func brokenCRC() throws {
        var data = try Self.encode(Self.pattern(width: 16, height: 16))
        let idat = try #require(data.indices.first { data[$0...].starts(with: "IDAT".utf8) })
        let length = Int(data[idat - 4]) << 24 | Int(data[idat - 3]) << 16 | Int(data[idat - 2]) << 8 | Int(data[idat - 1])
        data[idat + 4 + length] ^= 0xFF
        #expect {
            try CodecCatalogue.shared.decode(data)
        } throws: { error in
            guard case ImageCodecError.corrupt = error else { return false }
            return true
        }
    }

    @Test("Decoding at a target gives TIP's scaled size")
    func target() throws {
        let decoded = try CodecCatalogue.shared.decode(
            Self.encode(Self.pattern(width: 200, height: 100)),
            target: TargetSizing(dimensions: PixelSize(width: 64, height: 64), contentMode: .fit))
        #expect(decoded.container.dimensions == PixelSize(width: 64, height: 32))
    }
}
