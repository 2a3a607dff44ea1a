import Foundation
import Testing
@testable import ImagePipelineKit

/// JPEG XL decoding checked against `djxl` on files `cjxl` makes in the test.
///
/// Tolerance: both sides are libjxl converting to 8-bit sRGB; with alpha, premultiplication (ours after
/// libjxl, our PNG decoder's on djxl's straight alpha) may round a step apart. We allow 2 per sample.
@Suite("JPEG XL against djxl (generated fixtures)", .enabled(if: ModernFormatFixtures.hasJXLTools, ModernFormatFixtures.jxlToolsMissing))
struct JPEGXLCodecTests {
    static let tolerance = 2

    static func jxl(width: Int = 96, height: Int = 64, alpha: Bool = false, arguments: [String] = []) throws -> Data {
        try ModernFormatFixtures.encode(
            "cjxl", pngs: [ModernFormatFixtures.gradientPNG(width: width, height: height, alpha: alpha)],
            arguments: arguments, output: "out.jxl")
    }

    @Test("Lossy and lossless stills, bare codestream and container, decode to djxl's pixels",
          arguments: [[], ["-d", "0"], ["--container=1"], ["-p"]])
    func still(_ arguments: [String]) throws {
        let file = try Self.jxl(arguments: arguments)
        let decoded = try CodecCatalogue.shared.decode(file)
        #expect(decoded.properties.type == .jxl && decoded.properties.type.description == "jxl")
        #expect(decoded.properties.dimensions == PixelSize(width: 96, height: 64))
        let reference = try ModernFormatFixtures.referenceDecode("djxl", file, fileExtension: "jxl")
        #expect(ModernFormatFixtures.maxDifference(decoded.container.bitmap, reference) <= Self.tolerance)
    }

    @Test("Alpha survives: premultiplied pixels match djxl's RGBA")
    func alpha() throws {
        let file = try Self.jxl(alpha: true, arguments: ["-d", "0"])
        let decoded = try CodecCatalogue.shared.decode(file)
        #expect(decoded.properties.hasAlpha)
        #expect(decoded.container.bitmap.pixel(x: 0, y: 10).a == 0)
        let reference = try ModernFormatFixtures.referenceDecode("djxl", file, fileExtension: "jxl")
        #expect(ModernFormatFixtures.maxDifference(decoded.container.bitmap, reference) <= Self.tolerance)
    }

    @Test("An animation made from a GIF: every frame, its colours and durations")
    func animation() throws {
        let directory = try ModernFormatFixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let gif = directory.appendingPathComponent("in.gif")
        try GIFGeneratedTests.animation(frames: 3, width: 2, height: 2).write(to: gif)
        let file = try ModernFormatFixtures.encode("cjxl", inputs: [gif.path], arguments: ["-d", "0"], output: "anim.jxl", in: directory)
        let decoded = try CodecCatalogue.shared.decode(file)
        #expect(decoded.properties.isAnimated && decoded.container.frameCount == 3)
        #expect(decoded.container.frames[0].bitmap.pixel(x: 1, y: 1) == RGBA(r: 255, g: 0, b: 0, a: 255))
        #expect(decoded.container.frames[1].bitmap.pixel(x: 0, y: 0) == RGBA(r: 0, g: 0, b: 255, a: 255))
        for duration in decoded.container.frameDurations { #expect(abs(duration - 0.05) < 0.001) }
        let firstOnly = try CodecCatalogue.shared.decode(file, configuration: DecoderConfiguration(decodesAnimation: false))
        #expect(firstOnly.container.frameCount == 1)
    }

    @Test("A progressive file fed in pieces renders passes before its last bytes, then djxl's pixels")
    func progressivePasses() throws {
        let file = try ModernFormatFixtures.encode(
            "cjxl", pngs: [ModernFormatFixtures.gradientPNG(width: 512, height: 384, alpha: false)],
            arguments: ["-p"], output: "progressive.jxl")
        let fed = try ModernFormatFixtures.feed(JPEGXLDecoder(), file, chunk: max(64, file.count / 40))
        #expect(fed.progress.contains(.didLoadFrame), "no progressive pass announced")
        #expect(fed.previewBeforeEnd, "no pass rendered before the end of the data")
        let final = try #require(try fed.session.render(.completeImage, target: .original))
        let reference = try ModernFormatFixtures.referenceDecode("djxl", file, fileExtension: "jxl")
        #expect(ModernFormatFixtures.maxDifference(final.bitmap, reference) <= Self.tolerance)
    }

    @Test("A decode nobody wants any more stops at its next frame, as interrupted")
    func interruption() throws {
        let file = try Self.jxl()
        let session = JPEGXLDecoder().makeSession(configuration: .default, expectedByteCount: file.count)
        #expect(throws: ImageCodecError.interrupted) {
            try DecodeInterruption.$current.withValue(DecodeInterruption { true }) { _ = try session.append(file) }
        }
        #expect(throws: ImageCodecError.interrupted) { try session.render(.anyProgress, target: .original) }
    }

    @Test("A photo's EXIF orientation, carried into the codestream by cjxl, stands the image upright like the JPEG",
          .enabled(if: Corpus.isAvailable, Corpus.missingMessage), arguments: [[], ["--lossless_jpeg=0"]])
    func orientation(_ arguments: [String]) throws {
        // Recompressed JPEG decodes to nearly the same pixels (libjxl's own IDCT); re-encoded pixels are lossy.
        try ModernFormatFixtures.checkCarriedOrientation("cjxl", arguments: arguments, output: "o.jxl", meanTolerance: 4)
    }

    @Test("Decoding at a target size scales the full decode to exactly that size")
    func targetSize() throws {
        let target = TargetSizing(dimensions: PixelSize(width: 48, height: 48), contentMode: .fit)
        let decoded = try CodecCatalogue.shared.decode(Self.jxl(), target: target)
        #expect(decoded.container.bitmap.size == PixelSize(width: 48, height: 32))
    }

    @Test("Cut at 48 lengths, a still ends in a typed error or (once a pass is in) a partial image; never a crash")
    func truncations() throws {
        let file = try Self.jxl()
        for length in stride(from: 0, to: file.count, by: max(1, file.count / 48)) {
            do {
                let decoded = try CodecCatalogue.shared.decode(file.prefix(length))
                #expect(decoded.container.bitmap.size == PixelSize(width: 96, height: 64))
            } catch let error as ImageCodecError {
                #expect([1, 2, 3].contains(error.code), "\(length) bytes: \(error)")
            }
        }
    }

    @Test("Declared sizes over the limits are refused at the header, as limitExceeded", arguments: [9_000, 60_000])
    func dimensionBomb(_ side: Int) throws {
        let bomb = try JPEGXLSizeHeader.replacingSize(of: Self.jxl(), width: side, height: side)
        do {
            _ = try CodecCatalogue.shared.decode(bomb)
            Issue.record("a \(side)² bomb decoded")
        } catch let error as ImageCodecError {
            #expect(error.code == 5, "\(error)")
        }
    }

    @Test("A declared size that disagrees with the data: a typed error or an image of that size")
    func patchedDimensions() throws {
        for size in [PixelSize(width: 50, height: 50), PixelSize(width: 200, height: 120)] {
            let patched = try JPEGXLSizeHeader.replacingSize(of: Self.jxl(), width: size.width, height: size.height)
            do {
                let decoded = try CodecCatalogue.shared.decode(patched)
                #expect(decoded.container.bitmap.size == size)
            } catch let error as ImageCodecError {
                #expect([2, 3].contains(error.code), "\(size): \(error)")
            }
        }
    }
}

/// Rewrites the size header of a bare JPEG XL codestream (the bits right after `FF 0A`), shifting the rest.
enum JPEGXLSizeHeader {
    static func replacingSize(of codestream: Data, width: Int, height: Int) throws -> Data {
        struct NotACodestream: Error {}
        guard codestream.starts(with: [0xFF, 0x0A]) else { throw NotACodestream() }
        var bits = codestream.dropFirst(2).flatMap { byte in (0..<8).map { byte >> $0 & 1 == 1 } }
        var position = 0
        func read(_ count: Int) -> Int {
            defer { position += count }
            return (0..<count).reduce(0) { $0 | (bits[position + $1] ? 1 << $1 : 0) }
        }
        // SizeHeader: small ? 5-bit height/8 : a U32 of 9, 13, 18 or 30 bits; a 3-bit ratio; the width likewise when the ratio is 0.
        let small = read(1) == 1
        func skipDimension() { if small { _ = read(5) } else { _ = read([9, 13, 18, 30][read(2)]) } }
        skipDimension()
        if read(3) == 0 { skipDimension() }
        var header: [Bool] = [false]
        func write(_ value: Int, _ count: Int) { header += (0..<count).map { value >> $0 & 1 == 1 } }
        func writeDimension(_ value: Int) { write(3, 2); write(value - 1, 30) }
        writeDimension(height)
        write(0, 3)
        writeDimension(width)
        bits = header + bits[position...]
        while bits.count % 8 != 0 { bits.append(false) }
        let bytes = stride(from: 0, to: bits.count, by: 8).map { start in
            (0..<8).reduce(UInt8(0)) { $0 | (bits[start + $1] ? 1 << $1 : 0) }
        }
        return Data([0xFF, 0x0A] + bytes)
    }
}
