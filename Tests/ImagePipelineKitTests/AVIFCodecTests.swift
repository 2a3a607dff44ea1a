import Foundation
import Testing
@testable import ImagePipelineKit

/// AVIF decoding checked against `avifdec` on files `avifenc` makes in the test.
///
/// Tolerance: both sides run libavif's own YUV-to-RGB conversion, so opaque pixels match exactly; with alpha,
/// our premultiplication (libavif's) and the reference's (libpng's straight alpha, premultiplied by our PNG
/// decoder) may round one step apart. We allow a difference of 2 per sample.
@Suite("AVIF against avifdec (generated fixtures)", .enabled(if: ModernFormatFixtures.hasAVIFTools, ModernFormatFixtures.avifToolsMissing))
struct AVIFCodecTests {
    static let tolerance = 2

    static func avif(width: Int = 96, height: Int = 64, alpha: Bool = false, arguments: [String] = []) throws -> Data {
        try ModernFormatFixtures.encode(
            "avifenc", pngs: [ModernFormatFixtures.gradientPNG(width: width, height: height, alpha: alpha)],
            arguments: ["-s", "10"] + arguments, output: "out.avif")
    }

    static func animation(frames: Int = 3) throws -> Data {
        let pngs = try (0..<frames).map { try ModernFormatFixtures.gradientPNG(width: 48, height: 32, alpha: false, shift: $0 * 16) }
        return try ModernFormatFixtures.encode("avifenc", pngs: pngs, arguments: ["-s", "10", "--fps", "10"], output: "anim.avif")
    }

    @Test("An opaque still decodes to avifdec's pixels, named avif, at its size")
    func opaqueStill() throws {
        let file = try Self.avif()
        let decoded = try CodecCatalogue.shared.decode(file)
        #expect(decoded.properties.type == .avif && decoded.properties.type.description == "avif")
        #expect(decoded.properties.dimensions == PixelSize(width: 96, height: 64))
        #expect(!decoded.properties.hasAlpha && !decoded.properties.isAnimated)
        let reference = try ModernFormatFixtures.referenceDecode("avifdec", file, fileExtension: "avif")
        #expect(ModernFormatFixtures.maxDifference(decoded.container.bitmap, reference) <= Self.tolerance)
    }

    @Test("Alpha survives: premultiplied pixels match avifdec's RGBA")
    func alphaStill() throws {
        let file = try Self.avif(alpha: true)
        let decoded = try CodecCatalogue.shared.decode(file)
        #expect(decoded.properties.hasAlpha)
        #expect(decoded.container.bitmap.pixel(x: 0, y: 10).a == 0)
        let reference = try ModernFormatFixtures.referenceDecode("avifdec", file, fileExtension: "avif")
        #expect(ModernFormatFixtures.maxDifference(decoded.container.bitmap, reference) <= Self.tolerance)
    }

    @Test("An image sequence from three PNGs: three frames, each avifdec's frame, 0.1 s apart")
    func animation() throws {
        let file = try Self.animation()
        let decoded = try CodecCatalogue.shared.decode(file)
        #expect(decoded.properties.isAnimated && decoded.container.frameCount == 3)
        for (index, duration) in decoded.container.frameDurations.enumerated() {
            #expect(abs(duration - 0.1) < 0.001, "frame \(index) lasts \(duration) s")
        }
        for index in 0..<3 {
            let reference = try ModernFormatFixtures.referenceDecode("avifdec", file, fileExtension: "avif", extra: ["--index", "\(index)"])
            #expect(ModernFormatFixtures.maxDifference(decoded.container.frames[index].bitmap, reference) <= Self.tolerance,
                    "frame \(index)")
        }
        let firstOnly = try CodecCatalogue.shared.decode(file, configuration: DecoderConfiguration(decodesAnimation: false))
        #expect(firstOnly.container.frameCount == 1)
    }

    @Test("irot and imir stand the image upright like the EXIF orientation they equal; off, the stored pixels come back",
          arguments: [(["--irot", "1"], ImageOrientation.left), (["--irot", "3"], .right),
                      (["--imir", "1"], .upMirrored), (["--irot", "1", "--imir", "0"], .leftMirrored)])
    func orientation(_ arguments: [String], _ expected: ImageOrientation) throws {
        let plain = try CodecCatalogue.shared.decode(Self.avif()).container.bitmap
        let file = try Self.avif(arguments: arguments)
        let upright = try CodecCatalogue.shared.decode(file)
        #expect(upright.properties.orientation == expected)
        #expect(upright.properties.dimensions == expected.displayedSize(ofStored: plain.size))
        #expect(ModernFormatFixtures.maxDifference(upright.container.bitmap, try plain.applying(expected)) == 0)
        let stored = try CodecCatalogue.shared.decode(file, configuration: DecoderConfiguration(appliesOrientation: false))
        #expect(ModernFormatFixtures.maxDifference(stored.container.bitmap, plain) == 0)
    }

    @Test("A photo's EXIF orientation, carried by avifenc, stands the AVIF upright like the JPEG (mean difference ≤ 4)",
          .enabled(if: Corpus.isAvailable, Corpus.missingMessage))
    func exifOrientation() throws {
        try ModernFormatFixtures.checkCarriedOrientation("avifenc", arguments: ["-s", "10"], output: "o.avif", meanTolerance: 4)
    }

    @Test("Decoding at a target size scales the full decode to exactly that size")
    func targetSize() throws {
        let target = TargetSizing(dimensions: PixelSize(width: 48, height: 48), contentMode: .fit)
        let decoded = try CodecCatalogue.shared.decode(Self.avif(), target: target)
        #expect(decoded.container.bitmap.size == PixelSize(width: 48, height: 32))
    }

    @Test("Fed in 256-byte pieces: the headers load early, an animation's first frame renders before its last bytes")
    func incremental() throws {
        let file = try Self.animation(frames: 4)
        let fed = try ModernFormatFixtures.feed(AVIFDecoder(), file, chunk: 256)
        let headersAt = try #require(fed.progress.firstIndex { $0 >= .didLoadHeaders })
        #expect(headersAt < fed.progress.count - 1)
        #expect(fed.previewBeforeEnd, "no frame rendered before the end of the data")
        #expect(try fed.session.render(.completeImage, target: .original)?.frameCount == 4)
    }

    @Test("A decode nobody wants any more stops before its next frame, as interrupted")
    func interruption() throws {
        let file = try Self.animation()
        let session = AVIFDecoder().makeSession(configuration: .default, expectedByteCount: file.count)
        #expect(throws: ImageCodecError.interrupted) {
            try DecodeInterruption.$current.withValue(DecodeInterruption { true }) { _ = try session.append(file) }
        }
        #expect(throws: ImageCodecError.interrupted) { try session.render(.anyProgress, target: .original) }
    }

    @Test("Cut at 48 lengths, a still ends in a typed error (truncated or corrupt), never a crash")
    func truncations() throws {
        let file = try Self.avif()
        for length in stride(from: 0, to: file.count, by: max(1, file.count / 48)) {
            do {
                _ = try CodecCatalogue.shared.decode(file.prefix(length))
                Issue.record("\(length) of \(file.count) bytes decoded")
            } catch let error as ImageCodecError {
                #expect([1, 2, 3].contains(error.code), "\(length) bytes: \(error)")
            }
        }
    }

    @Test("Cut inside an animation, the frames that arrived whole are the image")
    func truncatedAnimation() throws {
        let file = try Self.animation(frames: 4)
        let decoded = try CodecCatalogue.shared.decode(file.prefix(file.count - 40))
        #expect((1...3).contains(decoded.container.frameCount))
    }

    @Test("Declared sizes over the limits are refused before decoding, as limitExceeded",
          arguments: [9_000, 20_000, 60_000])
    func dimensionBomb(_ side: Int) throws {
        let bomb = try Self.patchingDeclaredSize(of: Self.avif(), width: side, height: side)
        #expect(throws: ImageCodecError.self) { try CodecCatalogue.shared.decode(bomb) }
        do {
            _ = try CodecCatalogue.shared.decode(bomb)
        } catch let error as ImageCodecError {
            #expect(error.code == 5, "\(error)")
        }
    }

    @Test("A declared size that disagrees with the AV1 data: libavif scales to it, or a typed error")
    func patchedDimensions() throws {
        for size in [PixelSize(width: 50, height: 50), PixelSize(width: 200, height: 120), PixelSize(width: 96, height: 0)] {
            let patched = try Self.patchingDeclaredSize(of: Self.avif(), width: size.width, height: size.height)
            do {
                let decoded = try CodecCatalogue.shared.decode(patched)
                #expect(decoded.container.bitmap.size == size)
            } catch let error as ImageCodecError {
                #expect([2, 3, 5].contains(error.code), "\(size): \(error)")
            }
        }
    }

    /// The file with its `ispe` box (the declared width and height) rewritten.
    static func patchingDeclaredSize(of file: Data, width: Int, height: Int) throws -> Data {
        let box = try #require(file.firstRange(of: Data("ispe".utf8)))
        var patched = file
        let sizes = [width, height].flatMap { value in (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        patched.replaceSubrange((box.upperBound + 4)..<(box.upperBound + 12), with: sizes)
        return patched
    }
}
