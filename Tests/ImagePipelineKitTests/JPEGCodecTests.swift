import Foundation
import Testing
@testable import ImagePipelineKit

/// JPEG decoding checked against `djpeg` (libjpeg-turbo's own command-line decoder, a code path independent
/// of our C session: its own source manager, colour handling and output writer), run on the same file at
/// test time. Same library, same default IDCT: the pixels must agree to within 1 (fancy-upsampling rounding).
@Suite("JPEG against djpeg (corpus)", .enabled(if: Corpus.isAvailable, Corpus.missingMessage),
       .enabled(if: ReferenceTool.path(of: "djpeg") != nil, "djpeg not installed (libjpeg-turbo-progs): skipped"))
struct JPEGReferenceTests {
    static let files: [String] = {
        guard Corpus.isAvailable else { return [] }
        let all = Corpus.files(under: "conformance/jpeg", extensions: ["jpg", "jpeg"])
        // 12-bit (unsupported here) and CMYK (djpeg writes no RGB for it; checked against its RGB twin below).
        return all.filter { !$0.contains("monkey12") && !$0.contains("cmyk") }
    }()

    static func djpeg(_ path: String, scale: String? = nil) throws -> PixelImage {
        var arguments = ["-rgb"]
        if let scale { arguments += ["-scale", scale] }
        // djpeg exits 2 after warnings (a truncated file) but still writes the image.
        return try PixelImage(netpbm: ReferenceTool.run(ReferenceTool.path(of: "djpeg")!, arguments + [path], acceptingStatus: [0, 2]))
    }

    /// Our decode without orientation, so the pixels stay in djpeg's (stored) layout.
    static let unoriented = DecoderConfiguration(appliesOrientation: false)

    @Test("Every decodable corpus JPEG matches djpeg's pixels within 1", arguments: files)
    func matchesDjpeg(_ file: String) throws {
        let ours = try CodecCatalogue.shared.decode(Corpus.data(file), configuration: Self.unoriented)
        let reference = try Self.djpeg(Corpus.url(file).path)
        let image = PixelImage(rgbOf: ours.container.bitmap)
        #expect(image.width == reference.width && image.height == reference.height)
        #expect(image.maxDifference(to: reference) <= 1, "\(file): max difference \(image.maxDifference(to: reference))")
    }

    @Test("An incremental session fed 1, 7 and 2048-byte chunks ends with the one-shot pixels", arguments: [
        "conformance/jpeg/ljt-testorig.jpg", "conformance/jpeg/nuke-progressive.jpeg",
        "conformance/jpeg/derived/ljt-testorig-restart1.jpg", "conformance/jpeg/ljt-testimgari.jpg",
    ])
    func incrementalEqualsOneShot(_ file: String) throws {
        let data = try Corpus.data(file)
        let oneShot = PixelImage(rgbOf: try JPEGDecoder().decode(data, target: .original, configuration: .default).container.bitmap)
        for chunk in [1, 7, 2048] {
            let session = JPEGDecoder().makeSession(configuration: .default, expectedByteCount: nil)
            var offset = 0
            var last = DecoderProgress.didProgress
            while offset < data.count {
                last = try session.append(data[offset..<min(offset + chunk, data.count)])
                offset += chunk
            }
            // libjpeg's arithmetic decoder cannot suspend, so that file completes only when finish() says
            // no more bytes will come.
            #expect(last == .didCompleteLoading || file.hasSuffix("testimgari.jpg"))
            #expect(try session.finish() == .didCompleteLoading)
            let final = try #require(try session.render(.completeImage, target: .original))
            #expect(PixelImage(rgbOf: final.bitmap) == oneShot, "\(file) in \(chunk)-byte chunks")
        }
    }

    @Test("A DCT-scaled decode (1/2, 1/4, 1/8) matches djpeg -scale")
    func dctScaling() throws {
        let file = "conformance/jpeg/nuke-fixture.jpeg"   // 640x480
        for (denominator, size) in [(2, PixelSize(width: 320, height: 240)), (4, PixelSize(width: 160, height: 120)),
                                    (8, PixelSize(width: 80, height: 60))] {
            // A target exactly at the reduced size: the scaler after the DCT reduction has nothing to do.
            let target = TargetSizing(dimensions: size, contentMode: .fit)
            let ours = try JPEGDecoder().decode(Corpus.data(file), target: target, configuration: .default)
            #expect(ours.container.dimensions == size)
            let reference = try Self.djpeg(Corpus.url(file).path, scale: "1/\(denominator)")
            #expect(PixelImage(rgbOf: ours.container.bitmap).maxDifference(to: reference) <= 1, "1/\(denominator)")
        }
    }

    @Test("A truncated progressive JPEG decodes to what djpeg shows for it")
    func truncatedMatchesDjpeg() throws {
        let file = "bad/jpeg/wuffs-peacock.progressive.truncated.jpeg"
        let ours = try CodecCatalogue.shared.decode(Corpus.data(file))
        let reference = try Self.djpeg(Corpus.url(file).path)
        #expect(PixelImage(rgbOf: ours.container.bitmap).maxDifference(to: reference) <= 1)
    }
}

@Suite("JPEG colour, orientation and progressive scans (corpus)", .enabled(if: Corpus.isAvailable, Corpus.missingMessage))
struct JPEGCorpusTests {
    static func decode(_ file: String, target: TargetSizing = .original) throws -> DecodedImage {
        try CodecCatalogue.shared.decode(Corpus.data(file), target: target)
    }

    @Test("The IJG reference decodes to within JPEG loss of its source PPM, and its progressive transcode identically")
    func ijgReference() throws {
        let source = try PixelImage(netpbm: Corpus.data("conformance/jpeg/ljt-testorig.ppm"))
        let baseline = PixelImage(rgbOf: try Self.decode("conformance/jpeg/ljt-testorig.jpg").container.bitmap)
        #expect(baseline.psnr(to: source) > 30)
        let progressive = PixelImage(rgbOf: try Self.decode("conformance/jpeg/derived/ljt-testorig-progressive.jpg").container.bitmap)
        #expect(progressive == baseline)
    }

    @Test("Adobe CMYK comes out as the RGB twin of the same picture")
    func cmykToRGB() throws {
        let cmyk = PixelImage(rgbOf: try Self.decode("conformance/jpeg/pillow-pil_sample_cmyk.jpg").container.bitmap)
        let rgb = PixelImage(rgbOf: try Self.decode("conformance/jpeg/pillow-pil_sample_rgb.jpg").container.bitmap)
        #expect(cmyk.meanDifference(to: rgb) < 6, "mean difference \(cmyk.meanDifference(to: rgb))")
        // Inverted channels would be far off, not a few levels.
        #expect(cmyk.psnr(to: rgb) > 25)
    }

    @Test("12-bit JPEG fails with a typed unsupported error")
    func twelveBit() throws {
        #expect {
            _ = try Self.decode("conformance/jpeg/ljt-monkey12.jpg")
        } throws: { error in
            guard case ImageCodecError.unsupported = error else { return false }
            return true
        }
    }

    @Test("Every Landscape_N and Portrait_N stands upright: the same pixels as orientation 1, within JPEG loss")
    func orientationSets() throws {
        // Compare at 1/4 size: the printed digit (the one intended difference) then weighs little, and JPEG
        // noise averages out. A wrong rotation or mirror moves whole labels and lands far above the bound.
        for set in ["Landscape", "Portrait"] {
            let target = TargetSizing(dimensions: set == "Landscape" ? PixelSize(width: 450, height: 300)
                                                                     : PixelSize(width: 300, height: 450))
            let upright = try Self.decode("conformance/jpeg/exif-orientation/\(set)_1.jpg", target: target)
            let reference = PixelImage(rgbOf: upright.container.bitmap)
            for n in 0...8 {
                let decoded = try Self.decode("conformance/jpeg/exif-orientation/\(set)_\(n).jpg", target: target)
                #expect(decoded.properties.orientation.rawValue == max(n, 1), "\(set)_\(n) orientation")
                let image = PixelImage(rgbOf: decoded.container.bitmap)
                #expect(image.width == reference.width && image.height == reference.height, "\(set)_\(n) size")
                let difference = image.meanDifference(to: reference)
                #expect(difference < 3, "\(set)_\(n): mean difference \(difference)")
            }
            // The check above can fail: orientation 6 left unapplied is nowhere near upright.
            let raw = try CodecCatalogue.shared.decode(
                Corpus.data("conformance/jpeg/exif-orientation/\(set)_3.jpg"), target: target,
                configuration: DecoderConfiguration(appliesOrientation: false))
            #expect(PixelImage(rgbOf: raw.container.bitmap).meanDifference(to: reference) > 20)
        }
    }

    @Test("EXIF orientations 2 to 8 of the small hopper files are read, and dimensions are the upright ones")
    func hopperOrientations() throws {
        for n in 2...8 {
            let decoded = try Self.decode("conformance/jpeg/exif-orientation/pillow-hopper_orientation_\(n).jpg")
            #expect(decoded.properties.orientation.rawValue == n)
            #expect(decoded.container.dimensions == PixelSize(width: 128, height: 128))
        }
        // Stored 1200x1800 with orientation 6: a landscape picture once upright.
        let rotated = try Self.decode("conformance/jpeg/derived/Landscape_6-progressive.jpg")
        #expect(rotated.properties.orientation == .right)
        #expect(rotated.properties.dimensions == PixelSize(width: 1800, height: 1200))
        #expect(rotated.container.dimensions == PixelSize(width: 1800, height: 1200))
        let unrotated = try CodecCatalogue.shared.decode(
            Corpus.data("conformance/jpeg/derived/Landscape_6-progressive.jpg"),
            configuration: DecoderConfiguration(appliesOrientation: false))
        #expect(unrotated.container.dimensions == PixelSize(width: 1200, height: 1800))
    }

    @Test("Progressive scans render from partial data, full size, getting closer to the final image")
    func progressiveScans() throws {
        let data = try Corpus.data("conformance/jpeg/wuffs-peacock.progressive.jpeg")
        let final = PixelImage(rgbOf: try Self.decode("conformance/jpeg/wuffs-peacock.progressive.jpeg").container.bitmap)
        let session = JPEGDecoder().makeSession(configuration: .default, expectedByteCount: data.count)
        var qualities: [Double] = []
        for offset in stride(from: 0, to: data.count, by: 64) {
            let progress = try session.append(data[offset..<min(offset + 64, data.count)])
            if progress == .didLoadFrame, let preview = try session.render(.anyProgress, target: .original) {
                #expect(preview.dimensions == PixelSize(width: 100, height: 75))
                qualities.append(PixelImage(rgbOf: preview.bitmap).psnr(to: final))
            }
        }
        #expect(qualities.count >= 5, "previews: \(qualities)")
        #expect(qualities.first! < 30 && qualities.last! > qualities.first!, "\(qualities)")
        #expect(try session.render(.completeImage, target: .original).map { PixelImage(rgbOf: $0.bitmap) } == final)
    }

    @Test("The wuffs scan-by-scan cuts decode to full-size images that approach the complete file")
    func scanCuts() throws {
        let final = PixelImage(rgbOf: try Self.decode("conformance/jpeg/wuffs-peacock.progressive.jpeg").container.bitmap)
        var previous = 0.0
        for n in [0, 2, 4, 6, 8] {
            let cut = try Self.decode(String(format: "conformance/jpeg/progressive-scans/wuffs-peacock.progressive.scan%03d.jpeg", n))
            let quality = PixelImage(rgbOf: cut.container.bitmap).psnr(to: final)
            #expect(quality >= previous, "scan \(n): \(quality) dB after \(previous) dB")
            previous = quality
        }
    }
}

/// Behaviour that must hold on every clone: fixtures made by our own encoder, no corpus needed.
@Suite("JPEG generated fixtures")
struct JPEGGeneratedTests {
    /// A smooth colour pattern with some edges: realistic enough for JPEG, fully known.
    static func pattern(width: Int, height: Int) throws -> Bitmap {
        try Bitmap(width: width, height: height) { pixels, stride in
            for y in 0..<height {
                let row = (pixels + y * stride).assumingMemoryBound(to: UInt8.self)
                for x in 0..<width {
                    row[x * 4] = UInt8((x * 255) / max(1, width - 1))
                    row[x * 4 + 1] = UInt8((y * 255) / max(1, height - 1))
                    row[x * 4 + 2] = (x / 16 + y / 16) % 2 == 0 ? 200 : 60
                    row[x * 4 + 3] = 255
                }
            }
        }
    }

    static func encode(_ bitmap: Bitmap, _ options: EncodingOptions = [], quality: Double = 0.9) throws -> Data {
        try JPEGEncoder().encode(ImageContainer(bitmap: bitmap), options: options, quality: quality)
    }

    @Test("Encoding then decoding keeps the picture (baseline, progressive, grayscale)")
    func roundTrip() throws {
        let source = try Self.pattern(width: 193, height: 131)
        for options in [EncodingOptions(), .progressive] {
            let data = try Self.encode(source, options)
            let decoded = try CodecCatalogue.shared.decode(data)
            #expect(decoded.properties.type == .jpeg)
            #expect(decoded.properties.isProgressive == options.contains(.progressive))
            // The pattern's hard-edged blue checkerboard suffers from 4:2:0 chroma subsampling: ~29 dB at q90.
            #expect(PixelImage(rgbOf: decoded.container.bitmap).psnr(to: PixelImage(rgbOf: source)) > 26)
        }
        let gray = try CodecCatalogue.shared.decode(Self.encode(source, .grayscale)).container.bitmap
        let pixel = gray.pixel(x: 100, y: 60)
        #expect(pixel.r == pixel.g && pixel.g == pixel.b)
        #expect(try Self.encode(source, quality: 0.2).count < Self.encode(source, quality: 0.95).count)
    }

    @Test("Cut at any point, a JPEG gives a partial image or `truncated`, never a crash")
    func truncationEverywhere() throws {
        let data = try Self.encode(Self.pattern(width: 64, height: 48), .progressive)
        var partial = 0, truncated = 0
        for length in 0..<data.count {
            do {
                let decoded = try CodecCatalogue.shared.decode(data.prefix(length))
                #expect(decoded.container.dimensions == PixelSize(width: 64, height: 48))
                partial += 1
            } catch ImageCodecError.truncated {
                truncated += 1
            } catch ImageCodecError.unrecognizedFormat {
                #expect(length < 3)
            }
        }
        #expect(partial > 0 && truncated > 0)
    }

    @Test("A header declaring 60000x60000 is refused by the limits before anything is allocated")
    func dimensionBomb() throws {
        var data = try Self.encode(Self.pattern(width: 16, height: 16))
        // Patch the SOF0 frame header: FF C0, length (2), precision (1), height (2), width (2).
        let sof = try #require(data.indices.first { data[$0] == 0xFF && data[$0 + 1] == 0xC0 })
        data.replaceSubrange((sof + 5)..<(sof + 9), with: [0xEA, 0x60, 0xEA, 0x60])
        #expect(throws: ImageCodecError.limitExceeded(.dimension(PixelSize(width: 60000, height: 60000)))) {
            try CodecCatalogue.shared.decode(data)
        }
        let small = DecoderConfiguration(limits: DecodingLimits(maxPixels: 100))
        #expect(throws: ImageCodecError.limitExceeded(.pixels(PixelSize(width: 16, height: 16)))) {
            try CodecCatalogue.shared.decode(Self.encode(Self.pattern(width: 16, height: 16)), configuration: small)
        }
    }

    @Test("libjpeg's working memory stays under maxBytes: a progressive file needing more fails with limitExceeded")
    func workingMemoryCeiling() throws {
        let data = try Self.encode(Self.pattern(width: 1024, height: 1024), .progressive, quality: 0.5)
        // A progressive decode keeps every coefficient (1024 x 1024 x 3 components x 2 bytes = 6 MiB).
        let tight = DecoderConfiguration(limits: DecodingLimits(maxBytes: 5 << 20))
        #expect {
            try CodecCatalogue.shared.decode(data, configuration: tight)
        } throws: { error in
            guard case ImageCodecError.limitExceeded = error else { return false }
            return true
        }
        #expect(throws: Never.self) { try CodecCatalogue.shared.decode(data) }
    }

    @Test("Garbage after the SOI marker is corrupt, not a crash or exit()")
    func garbage() throws {
        var data = Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10])
        data.append(contentsOf: (0..<500).map { UInt8(truncatingIfNeeded: $0 &* 37) })
        #expect {
            try CodecCatalogue.shared.decode(data)
        } throws: { error in
            guard let error = error as? ImageCodecError else { return false }
            return error.code == ImageCodecError.corrupt("").code || error == .truncated
        }
    }

    @Test("A session with a preferred sizing decodes at the largest DCT reduction that covers it")
    func preferredSizingScalesWhileDecoding() throws {
        let data = try Self.encode(Self.pattern(width: 800, height: 600))
        let target = TargetSizing(dimensions: PixelSize(width: 150, height: 150), contentMode: .fit)
        let session = JPEGDecodingSession(
            configuration: DecoderConfiguration(preferredSizing: target), mode: .incremental)
        _ = try session.append(data)
        _ = try session.finish()
        // 800x600 fit into 150x150 is 150x113: 1/4 (200x150) covers it, 1/8 (100x75) would not.
        #expect(session.decodedSize == PixelSize(width: 200, height: 150))
        #expect(try session.render(.completeImage, target: target)?.dimensions == PixelSize(width: 150, height: 113))
    }

    @Test("Baseline sessions render the rows so far for any-progress, nothing for full-frame")
    func baselineRows() throws {
        let data = try Self.encode(Self.pattern(width: 256, height: 256))
        let session = JPEGDecoder().makeSession(configuration: .default, expectedByteCount: nil)
        _ = try session.append(data.prefix(data.count / 2))
        let partial = try #require(try session.render(.anyProgress, target: .original))
        #expect(partial.dimensions == PixelSize(width: 256, height: 256))
        #expect(partial.bitmap.pixel(x: 10, y: 0).a == 255)
        #expect(partial.bitmap.pixel(x: 10, y: 255).a == 0)
        #expect(try session.render(.fullFrameProgress, target: .original) == nil)
        #expect(try session.render(.completeImage, target: .original) == nil)
    }
}
