import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import Testing
import TestSupport

/// AVIF and JPEG XL through a whole fetch over the loopback origin, slowed so that the bytes arrive over
/// many chunks, and paused halfway so that the first half arrives apart from the rest even when a loaded
/// machine delays the client's reads: a JPEG XL's passes show as progressive images, an AVIF animation's first
/// frame early.
@Suite("AVIF and JPEG XL fetched while they download", .serialized,
       .enabled(if: ModernFormatTool.path("cjxl") != nil && ModernFormatTool.path("avifenc") != nil, "cjxl or avifenc not installed: skipped"))
struct ModernFormatFetchTests {
    @Test("A progressive JPEG XL shows passes before its final image when the delegate consents")
    func jpegXLPasses() async throws {
        let file = try await ModernFormatTool.encode("cjxl", inputs: [ModernFormatTool.photoPNG(width: 768, height: 512, shift: 0)],
                                                     arguments: ["-p"], output: "p.jxl")
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            h.server.setAsset(file, at: "/p.jxl", contentType: "application/octet-stream")
            h.server.setShaping(OriginShaping(bytesPerSecond: max(20_000, file.count * 2)), for: "/p.jxl")
            h.server.setFaults([.pauseAfterBytes(file.count / 2, for: .milliseconds(500))], for: "/p.jxl")
            let delegate = RecordingFetchDelegate(loadsProgressively: true)
            let operation = h.pipeline.operation(with: h.request("/p.jxl", identifier: "p"), delegate: delegate)
            h.pipeline.fetchImage(with: operation)
            let result = try await delegate.finished().get()
            #expect(result.image.bitmap.size == PixelSize(width: 768, height: 512))
            #expect(delegate.events.contains(.progressiveScan), "no pass shown: \(delegate.events)")
            // Shown while bytes were still missing (a download all in reports 0.999 until the final image).
            let firstPass = try #require(delegate.incrementalImages.first)
            #expect(firstPass.progress < 0.999, "the first pass came with the last bytes")
        }
    }

    @Test("An animated AVIF shows its first frame while the rest downloads")
    func avifFirstFrame() async throws {
        let pngs = try (0..<6).map { try ModernFormatTool.photoPNG(width: 256, height: 192, shift: $0 * 20) }
        let file = try await ModernFormatTool.encode("avifenc", inputs: pngs, arguments: ["-s", "10"], output: "a.avif")
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            h.server.setAsset(file, at: "/a.avif", contentType: "image/avif")
            h.server.setShaping(OriginShaping(bytesPerSecond: max(20_000, file.count * 2)), for: "/a.avif")
            h.server.setFaults([.pauseAfterBytes(file.count / 2, for: .milliseconds(500))], for: "/a.avif")
            let delegate = RecordingFetchDelegate()
            let operation = h.pipeline.operation(with: h.request("/a.avif", identifier: "a"), delegate: delegate)
            h.pipeline.fetchImage(with: operation)
            let result = try await delegate.finished().get()
            #expect(result.image.frameCount == 6)
            #expect(delegate.events.contains(.firstAnimatedFrame), "no first frame: \(delegate.events)")
        }
    }
}

/// Runs the AVIF and JPEG XL command-line encoders for the tests of this target.
enum ModernFormatTool {
    static func path(_ name: String) -> String? {
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
            .map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// A smooth colour field with detail (a photo's stand-in), as an opaque PNG. Opaque as a photo is: libjxl 0.7
    /// reports no passes of an image with an alpha channel while it loads, even an alpha of 255 everywhere.
    static func photoPNG(width: Int, height: Int, shift: Int) throws -> Data {
        let bitmap = try Bitmap(width: width, height: height) { pixels, stride in
            for y in 0..<height {
                let row = (pixels + y * stride).assumingMemoryBound(to: UInt8.self)
                for x in 0..<width {
                    row[x * 4] = UInt8((x + shift) & 0xFF)
                    row[x * 4 + 1] = UInt8((y * 3 + (x ^ y)) & 0xFF)
                    row[x * 4 + 2] = UInt8(((x * y) >> 6 + shift) & 0xFF)
                    row[x * 4 + 3] = 255
                }
            }
        }
        return try CodecCatalogue.shared.encode(ImageContainer(bitmap: bitmap), as: .png, options: .noAlpha)
    }

    static func encode(_ tool: String, inputs: [Data], arguments: [String], output: String) async throws -> Data {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-modern-fetch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var paths: [String] = []
        for (index, input) in inputs.enumerated() {
            let url = directory.appendingPathComponent("in\(index).png")
            try input.write(to: url)
            paths.append(url.path)
        }
        let out = directory.appendingPathComponent(output)
        let outcome = try await ChildProcess.run(try #require(path(tool)), arguments + paths + [out.path], timeout: 120)
        try #require(outcome.exitCode == 0, "\(tool) failed")
        return try Data(contentsOf: out)
    }
}
