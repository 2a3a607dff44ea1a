import CWebP
import CWebPMux
import Foundation
import Testing
@testable import ImagePipelineKit

/// WebP fixtures are made in the test with libwebp's own encoders (the corpus has no WebP files).
@Suite("WebP generated fixtures")
struct WebPCodecTests {
    /// A solid or patterned bitmap with straight colour `rgba`, stored premultiplied.
    static func solid(_ width: Int, _ height: Int, _ rgba: (UInt8, UInt8, UInt8, UInt8)) throws -> Bitmap {
        try Bitmap(width: width, height: height) { pixels, stride in
            for y in 0..<height {
                let row = (pixels + y * stride).assumingMemoryBound(to: UInt8.self)
                for x in 0..<width {
                    let a = Int(rgba.3)
                    row[x * 4] = UInt8((Int(rgba.0) * a + 127) / 255)
                    row[x * 4 + 1] = UInt8((Int(rgba.1) * a + 127) / 255)
                    row[x * 4 + 2] = UInt8((Int(rgba.2) * a + 127) / 255)
                    row[x * 4 + 3] = rgba.3
                }
            }
        }
    }

    static func gradient(_ width: Int, _ height: Int, alpha: Bool) throws -> Bitmap {
        try Bitmap(width: width, height: height) { pixels, stride in
            for y in 0..<height {
                let row = (pixels + y * stride).assumingMemoryBound(to: UInt8.self)
                for x in 0..<width {
                    let a = alpha ? UInt8((x * 255) / max(1, width - 1)) : 255
                    let straight = [UInt8((x * 255) / max(1, width - 1)), UInt8((y * 255) / max(1, height - 1)), 90]
                    for c in 0..<3 { row[x * 4 + c] = UInt8((Int(straight[c]) * Int(a) + 127) / 255) }
                    row[x * 4 + 3] = a
                }
            }
        }
    }

    static func encode(_ bitmap: Bitmap, quality: Double) throws -> Data {
        try WebPEncoder().encode(ImageContainer(bitmap: bitmap), options: [], quality: quality)
    }

    struct FrameSpec {
        var bitmap: Bitmap
        var x: Int, y: Int
        var milliseconds: Int32
        var blend: Bool
        var disposeToBackground: Bool
    }

    /// An animation assembled with libwebpmux, each frame placed, blended and disposed as specified.
    static func animation(canvas: PixelSize, loopCount: Int32, frames: [FrameSpec]) throws -> Data {
        let mux = try #require(WebPMuxNew())
        defer { WebPMuxDelete(mux) }
        for frame in frames {
            let still = try encode(frame.bitmap, quality: 1)
            try still.withUnsafeBytes { bytes in
                var info = WebPMuxFrameInfo()
                info.bitstream = WebPData(bytes: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), size: bytes.count)
                info.x_offset = Int32(frame.x)
                info.y_offset = Int32(frame.y)
                info.duration = frame.milliseconds
                info.id = WEBP_CHUNK_ANMF
                info.dispose_method = frame.disposeToBackground ? WEBP_MUX_DISPOSE_BACKGROUND : WEBP_MUX_DISPOSE_NONE
                info.blend_method = frame.blend ? WEBP_MUX_BLEND : WEBP_MUX_NO_BLEND
                try #require(WebPMuxPushFrame(mux, &info, 1) == WEBP_MUX_OK)
            }
        }
        try #require(WebPMuxSetCanvasSize(mux, Int32(canvas.width), Int32(canvas.height)) == WEBP_MUX_OK)
        var parameters = WebPMuxAnimParams(bgcolor: 0, loop_count: loopCount)
        try #require(WebPMuxSetAnimationParams(mux, &parameters) == WEBP_MUX_OK)
        var output = WebPData()
        try #require(WebPMuxAssemble(mux, &output) == WEBP_MUX_OK)
        defer { WebPFree(UnsafeMutableRawPointer(mutating: output.bytes)) }
        return Data(bytes: output.bytes, count: output.size)
    }

    static func threeFrames() throws -> Data {
        try animation(canvas: PixelSize(width: 8, height: 8), loopCount: 3, frames: [
            FrameSpec(bitmap: try solid(8, 8, (255, 0, 0, 255)), x: 0, y: 0, milliseconds: 100, blend: false, disposeToBackground: false),
            FrameSpec(bitmap: try solid(4, 4, (0, 0, 255, 128)), x: 2, y: 2, milliseconds: 200, blend: true, disposeToBackground: true),
            FrameSpec(bitmap: try solid(2, 2, (0, 255, 0, 255)), x: 6, y: 6, milliseconds: 300, blend: false, disposeToBackground: false),
        ])
    }

    static func close(_ a: RGBA, _ b: RGBA, within tolerance: Int = 2) -> Bool {
        abs(Int(a.r) - Int(b.r)) <= tolerance && abs(Int(a.g) - Int(b.g)) <= tolerance
            && abs(Int(a.b) - Int(b.b)) <= tolerance && abs(Int(a.a) - Int(b.a)) <= tolerance
    }

    @Test("Lossless with partial alpha decodes to exactly the premultiplied source")
    func lossless() throws {
        let source = try Self.gradient(61, 33, alpha: true)
        let decoded = try CodecCatalogue.shared.decode(Self.encode(source, quality: 1))
        #expect(decoded.properties.type == .webp && decoded.properties.hasAlpha)
        let a = source.packedPixels(), b = decoded.container.bitmap.packedPixels()
        var worst = 0
        for i in a.indices { worst = max(worst, abs(Int(a[i]) - Int(b[i]))) }
        // Premultiplied → straight (encoder input) → premultiplied by libwebp: exact up to that rounding.
        #expect(worst <= 1)
    }

    @Test("Lossy decodes close to the source")
    func lossy() throws {
        let source = try Self.gradient(120, 80, alpha: false)
        let decoded = try CodecCatalogue.shared.decode(Self.encode(source, quality: 0.9))
        #expect(decoded.container.dimensions == PixelSize(width: 120, height: 80))
        #expect(PixelImage(rgbOf: decoded.container.bitmap).psnr(to: PixelImage(rgbOf: source)) > 30)
    }

    @Test("Animation: offsets, alpha blending, dispose-to-background, durations and loop count")
    func animation() throws {
        let decoded = try CodecCatalogue.shared.decode(Self.threeFrames())
        let frames = decoded.container.frames
        #expect(decoded.properties.isAnimated && frames.count == 3)
        #expect(decoded.container.loopCount == 3)
        #expect(decoded.container.frameDurations == [0.1, 0.2, 0.3])
        #expect(frames[0].bitmap.pixel(x: 3, y: 3) == RGBA(r: 255, g: 0, b: 0, a: 255))
        // Half-transparent blue over red.
        #expect(Self.close(frames[1].bitmap.pixel(x: 3, y: 3), RGBA(r: 127, g: 0, b: 128, a: 255)), "\(frames[1].bitmap.pixel(x: 3, y: 3))")
        #expect(frames[1].bitmap.pixel(x: 0, y: 0) == RGBA(r: 255, g: 0, b: 0, a: 255))
        // Frame 1's rectangle went back to transparent; red stays elsewhere; green drawn at (6, 6).
        #expect(frames[2].bitmap.pixel(x: 3, y: 3) == RGBA(r: 0, g: 0, b: 0, a: 0))
        #expect(frames[2].bitmap.pixel(x: 0, y: 0) == RGBA(r: 255, g: 0, b: 0, a: 255))
        #expect(frames[2].bitmap.pixel(x: 7, y: 7) == RGBA(r: 0, g: 255, b: 0, a: 255))
        let still = try CodecCatalogue.shared.decode(Self.threeFrames(), configuration: DecoderConfiguration(decodesAnimation: false))
        #expect(still.container.frameCount == 1)
    }

    @Test("Incremental sessions (1, 17 and random chunks) end with the one-shot pixels; a half-fed still renders full size")
    func incremental() throws {
        for data in [try Self.encode(Self.gradient(90, 70, alpha: false), quality: 0.8),
                     try Self.encode(Self.gradient(90, 70, alpha: true), quality: 1), try Self.threeFrames()] {
            let oneShot = try CodecCatalogue.shared.decode(data).container
            for chunk in [1, 17, 0] {
                let session = WebPDecoder().makeSession(configuration: .default, expectedByteCount: nil)
                var offset = 0
                while offset < data.count {
                    let size = chunk == 0 ? Int.random(in: 1...400) : chunk
                    _ = try session.append(data[offset..<min(offset + size, data.count)])
                    offset += size
                    if offset < data.count, offset >= data.count / 2, offset - size < data.count / 2,
                       session.properties?.isAnimated == false {
                        let preview = try session.render(.anyProgress, target: .original)
                        #expect(preview == nil || preview?.dimensions == PixelSize(width: 90, height: 70))
                    }
                }
                #expect(try session.finish() == .didCompleteLoading)
                let final = try #require(try session.render(.completeImage, target: .original))
                #expect(final.frames.map { $0.bitmap.packedPixels() } == oneShot.frames.map { $0.bitmap.packedPixels() })
            }
        }
    }

    @Test("Cut anywhere: a partial still, or `truncated`, or no format; never a crash")
    func truncation() throws {
        for data in [try Self.encode(Self.gradient(40, 30, alpha: true), quality: 0.7), try Self.threeFrames()] {
            for length in 0..<data.count {
                do {
                    _ = try CodecCatalogue.shared.decode(data.prefix(length))
                } catch let error as ImageCodecError {
                    #expect(error == .truncated || error == .unrecognizedFormat || error.code == 3, "\(length): \(error)")
                }
            }
        }
    }

    @Test("A canvas over the limits is refused from the header; a broken bitstream is corrupt")
    func limitsAndCorruption() throws {
        let small = DecoderConfiguration(limits: DecodingLimits(maxPixels: 16))
        #expect(throws: ImageCodecError.limitExceeded(.pixels(PixelSize(width: 8, height: 8)))) {
            try CodecCatalogue.shared.decode(Self.threeFrames(), configuration: small)
        }
        var broken = try Self.encode(Self.gradient(40, 30, alpha: false), quality: 0.7)
        for i in 40..<min(broken.count, 200) { broken[i] ^= 0x5A }
        #expect {
            try CodecCatalogue.shared.decode(broken)
        } throws: { error in
            guard let error = error as? ImageCodecError else { return false }
            return error.code == 3 || error == .truncated
        }
    }

    @Test("Decoding at a target gives TIP's scaled size")
    func target() throws {
        let decoded = try CodecCatalogue.shared.decode(
            Self.encode(Self.gradient(100, 50, alpha: false), quality: 0.8),
            target: TargetSizing(dimensions: PixelSize(width: 32, height: 32), contentMode: .fit))
        #expect(decoded.container.dimensions == PixelSize(width: 32, height: 16))
    }
}
