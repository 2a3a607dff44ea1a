import Foundation
import Testing
@testable import ImagePipelineKit

@Suite("GIF against giflib dumps and the gif-test-suite (corpus)", .enabled(if: Corpus.isAvailable, Corpus.missingMessage))
struct GIFCorpusTests {
    static func decode(_ file: String) throws -> DecodedImage {
        try CodecCatalogue.shared.decode(Corpus.data("conformance/gif/\(file)"))
    }

    /// giflib's `gif2rgb -1` writes every pixel's palette colour, transparent ones included; compare the
    /// opaque pixels exactly and check that the others are transparent in ours.
    static func compare(_ bitmap: Bitmap, toRGB reference: Data, file: String) {
        let bytes = [UInt8](reference)
        #expect(bytes.count == bitmap.width * bitmap.height * 3, "\(file) size")
        var mismatches = 0
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let p = bitmap.pixel(x: x, y: y), i = (y * bitmap.width + x) * 3
                if p.a == 255, (p.r, p.g, p.b) != (bytes[i], bytes[i + 1], bytes[i + 2]) { mismatches += 1 }
                if p.a != 255 && p != RGBA(r: 0, g: 0, b: 0, a: 0) { mismatches += 1 }
            }
        }
        #expect(mismatches == 0, "\(file): \(mismatches) pixels differ from giflib")
    }

    @Test("Still GIFs match giflib's gif2rgb dumps exactly (interlaced and transparent included)",
          arguments: ["gifgrid", "treescap", "treescap-interlaced", "x-trans"])
    func stills(_ name: String) throws {
        let decoded = try Self.decode("giflib/\(name).gif")
        #expect(decoded.container.frameCount == 1)
        Self.compare(decoded.container.bitmap, toRGB: try Corpus.data("conformance/gif/giflib/\(name).rgb"), file: name)
    }

    @Test("fire.gif's last composited frame is giflib's overpaint of all 33 frames")
    func fire() throws {
        let decoded = try Self.decode("giflib/fire.gif")
        #expect(decoded.container.frameCount == 33)
        Self.compare(decoded.container.frames.last!.bitmap, toRGB: try Corpus.data("conformance/gif/giflib/fire.rgb"), file: "fire")
    }

    @Test("Loop counts: NETSCAPE 0 loops forever, no extension plays once; per-frame delays are kept")
    func loopsAndDurations() throws {
        #expect(try Self.decode("gif-test-suite/animated_loop.gif").container.loopCount == 0)
        #expect(try Self.decode("gif-test-suite/animated_noloop.gif").container.loopCount == 1)
        let variable = try Self.decode("gif-test-suite/animated_loop_variable_delay.gif").container
        #expect(variable.frameDurations == [1.0, 1.0, 0.1, 1.0])
        #expect(variable.isAnimated && variable.frameCount == 4)
    }

    @Test("Disposal: background clears the frame's area, previous restores it, none keeps it")
    func disposal() throws {
        let probe = (x: 15, y: 15)   // inside frame 1's rect (10...40), outside frame 2's
        let background = try Self.decode("gif-test-suite/animated_transparent_frame_restorebackground_loop.gif").container.frames
        let previous = try Self.decode("gif-test-suite/animated_transparent_frame_restoreprev_loop.gif").container.frames
        let none = try Self.decode("gif-test-suite/animated_transparent_frame_norestore_loop.gif").container.frames
        for frames in [background, previous, none] {
            #expect(frames[1].bitmap.pixel(x: probe.x, y: probe.y) != frames[0].bitmap.pixel(x: probe.x, y: probe.y))
        }
        #expect(background[2].bitmap.pixel(x: probe.x, y: probe.y).a == 0)
        #expect(previous[2].bitmap.pixel(x: probe.x, y: probe.y) == previous[0].bitmap.pixel(x: probe.x, y: probe.y))
        #expect(none[2].bitmap.pixel(x: probe.x, y: probe.y) == none[1].bitmap.pixel(x: probe.x, y: probe.y))
    }

    @Test("Frames partly outside the screen are clipped, not refused")
    func outOfBounds() throws {
        let decoded = try Self.decode("gif-test-suite/animated_transparent_loop_frames_out_of_bounds.gif")
        #expect(decoded.container.frameCount == 4)
        #expect(decoded.container.dimensions == PixelSize(width: 100, height: 100))
    }

    @Test("Incremental sessions in 1, 13 and random chunks give the one-shot frames", arguments: [
        "giflib/welcome2.gif", "gif-test-suite/animated_loop_interlaced.gif", "pillow-dispose_prev.gif",
    ])
    func incremental(_ file: String) throws {
        let data = try Corpus.data("conformance/gif/\(file)")
        let oneShot = try CodecCatalogue.shared.decode(data).container
        for chunk in [1, 13, 0] {
            let session = GIFDecoder().makeSession(configuration: .default, expectedByteCount: nil)
            var offset = 0, sawFrame = false
            while offset < data.count {
                let size = chunk == 0 ? Int.random(in: 1...500) : chunk
                if try session.append(data[offset..<min(offset + size, data.count)]) >= .didLoadFrame { sawFrame = true }
                offset += size
            }
            #expect(sawFrame)
            #expect(try session.finish() == .didCompleteLoading)
            let final = try #require(try session.render(.completeImage, target: .original))
            #expect(final.frameCount == oneShot.frameCount)
            #expect(zip(final.frames, oneShot.frames).allSatisfy { $0.bitmap.packedPixels() == $1.bitmap.packedPixels() && $0.duration == $1.duration })
        }
    }
}

/// GIFs assembled byte by byte in the test: every clone runs these.
@Suite("GIF generated fixtures")
struct GIFGeneratedTests {
    /// A GIF89a with a 2-colour global palette (red, blue) and `frames` 2x2 frames, each one uncompressed-style
    /// LZW stream (clear, four indices, end) drawing colour `frame % 2`, 5 cs apart, looping forever.
    static func animation(frames: Int, width: Int = 2, height: Int = 2) -> Data {
        var d = Data("GIF89a".utf8)
        d += [UInt8(width & 0xFF), UInt8(width >> 8), UInt8(height & 0xFF), UInt8(height >> 8), 0x80, 0, 0]
        d += [0xFF, 0, 0, 0, 0, 0xFF]                                             // red, blue
        d += [0x21, 0xFF, 11] + Array("NETSCAPE2.0".utf8) + [3, 1, 0, 0, 0]      // loop forever
        for index in 0..<frames {
            d += [0x21, 0xF9, 4, 0x04, 5, 0, 0, 0]                               // GCE: disposal 1, 5 cs
            d += [0x2C, 0, 0, 0, 0, 2, 0, 2, 0, 0]                                // 2x2 at the origin
            // LZW, minimum code size 2: clear (4), four pixels of the colour, end (5); 3-bit codes.
            let c = UInt32(index % 2)
            let codes: [UInt32] = [4, c, c, c, c, 5]
            var bits: UInt32 = 0, count = 0
            var bytes: [UInt8] = []
            for code in codes {
                bits |= code << UInt32(count)
                count += 3
                while count >= 8 { bytes.append(UInt8(bits & 0xFF)); bits >>= 8; count -= 8 }
            }
            if count > 0 { bytes.append(UInt8(bits & 0xFF)) }
            d += [2, UInt8(bytes.count)] + bytes + [0]
        }
        d.append(0x3B)
        return d
    }

    @Test("A hand-made animation decodes: frames, colours, durations, loop count")
    func handMade() throws {
        let decoded = try CodecCatalogue.shared.decode(Self.animation(frames: 3))
        #expect(decoded.properties.type == .gif && decoded.properties.isAnimated)
        #expect(decoded.container.frameCount == 3 && decoded.container.loopCount == 0)
        #expect(decoded.container.frames[0].bitmap.pixel(x: 1, y: 1) == RGBA(r: 255, g: 0, b: 0, a: 255))
        #expect(decoded.container.frames[1].bitmap.pixel(x: 0, y: 0) == RGBA(r: 0, g: 0, b: 255, a: 255))
        #expect(decoded.container.frameDurations == [0.05, 0.05, 0.05])
    }

    @Test("Cut anywhere, a GIF gives the frames that arrived whole, or `truncated`; never a crash")
    func truncation() throws {
        let data = Self.animation(frames: 3)
        for length in 0..<data.count {
            do {
                let decoded = try CodecCatalogue.shared.decode(data.prefix(length))
                #expect(decoded.container.frameCount <= 3)
            } catch let error as ImageCodecError {
                #expect(error == .truncated || error == .unrecognizedFormat, "\(length): \(error)")
            }
        }
    }

    @Test("A 65535x65535 screen is refused before anything is allocated")
    func screenBomb() {
        #expect(throws: ImageCodecError.limitExceeded(.dimension(PixelSize(width: 65535, height: 65535)))) {
            try CodecCatalogue.shared.decode(Self.animation(frames: 1, width: 65535, height: 65535))
        }
    }

    @Test("More frames than maxFrames is limitExceeded(.frames); decodesAnimation false stops after one")
    func frameLimit() throws {
        let data = Self.animation(frames: 12)
        let limited = DecoderConfiguration(limits: DecodingLimits(maxFrames: 10))
        #expect(throws: ImageCodecError.limitExceeded(.frames(11))) { try CodecCatalogue.shared.decode(data, configuration: limited) }
        let still = try CodecCatalogue.shared.decode(data, configuration: DecoderConfiguration(decodesAnimation: false))
        #expect(still.container.frameCount == 1)
    }

    @Test("Garbage where a record should start is corrupt")
    func garbageRecord() {
        var data = Self.animation(frames: 1)
        data.insert(0x99, at: 13 + 6)
        #expect {
            try CodecCatalogue.shared.decode(data)
        } throws: { error in
            guard case ImageCodecError.corrupt = error else { return false }
            return true
        }
    }
}
