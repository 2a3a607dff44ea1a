import Foundation
import Testing
@testable import ImagePipelineKit

/// AVIF and JPEG XL fixtures made at test time with the libraries' own command-line encoders (`avifenc`,
/// `cjxl`) from PNGs we draw, and the matching reference decodes (`avifdec`, `djxl`) read back as PNG.
enum ModernFormatFixtures {
    static var hasAVIFTools: Bool { ReferenceTool.path(of: "avifenc") != nil && ReferenceTool.path(of: "avifdec") != nil }
    static var hasJXLTools: Bool { ReferenceTool.path(of: "cjxl") != nil && ReferenceTool.path(of: "djxl") != nil }
    static let avifToolsMissing: Comment = "avifenc/avifdec not installed (libavif-bin): skipped"
    static let jxlToolsMissing: Comment = "cjxl/djxl not installed (libjxl-tools): skipped"

    /// A fresh scratch directory, removed by the caller.
    static func scratchDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("ipk-modern-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A gradient with colour in both directions (and, when asked, alpha rising left to right), as a PNG.
    static func gradientPNG(width: Int, height: Int, alpha: Bool, shift: Int = 0) throws -> Data {
        let bitmap = try Bitmap(width: width, height: height) { pixels, stride in
            for y in 0..<height {
                let row = (pixels + y * stride).assumingMemoryBound(to: UInt8.self)
                for x in 0..<width {
                    let a = alpha ? (x * 255) / max(1, width - 1) : 255
                    let straight = [((x + shift) * 255 / max(1, width - 1)) % 256, (y * 255) / max(1, height - 1), (90 + shift * 40) % 256]
                    for c in 0..<3 { row[x * 4 + c] = UInt8((straight[c] * a + 127) / 255) }
                    row[x * 4 + 3] = UInt8(a)
                }
            }
        }
        return try PNGEncoder().encode(ImageContainer(bitmap: bitmap), options: alpha ? [] : .noAlpha, quality: 1)
    }

    /// Runs `encoder` (`avifenc` or `cjxl`) on the PNGs (several make an animation, for avifenc) and returns
    /// the encoded file.
    static func encode(_ encoder: String, pngs: [Data], arguments: [String] = [], output name: String) throws -> Data {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var inputs: [String] = []
        for (index, png) in pngs.enumerated() {
            let url = directory.appendingPathComponent("in\(index).png")
            try png.write(to: url)
            inputs.append(url.path)
        }
        return try encode(encoder, inputs: inputs, arguments: arguments, output: name, in: directory)
    }

    /// Runs `encoder` on files already written (a GIF for cjxl, say).
    static func encode(_ encoder: String, inputs: [String], arguments: [String], output name: String, in directory: URL) throws -> Data {
        let output = directory.appendingPathComponent(name)
        let tool = try #require(ReferenceTool.path(of: encoder))
        _ = try ReferenceTool.run(tool, arguments + inputs + [output.path])
        return try Data(contentsOf: output)
    }

    /// The reference decode of `file` by `decoder` (`avifdec` or `djxl`), as a PNG read back with our PNG codec
    /// (libpng: a path independent of the codec under test). `extra` picks a frame (`--index N` for avifdec).
    static func referenceDecode(_ decoder: String, _ file: Data, fileExtension: String, extra: [String] = []) throws -> Bitmap {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("in.\(fileExtension)")
        let output = directory.appendingPathComponent("out.png")
        try file.write(to: input)
        let tool = try #require(ReferenceTool.path(of: decoder))
        _ = try ReferenceTool.run(tool, extra + [input.path, output.path])
        return try CodecCatalogue.shared.decode(Data(contentsOf: output)).container.bitmap
    }

    /// Largest difference of any premultiplied RGBA sample between two bitmaps of one size.
    static func maxDifference(_ a: Bitmap, _ b: Bitmap) -> Int {
        precondition(a.size == b.size)
        var largest = 0
        for y in 0..<a.height {
            let rowA = a.row(y), rowB = b.row(y)
            for i in 0..<(a.width * 4) { largest = max(largest, abs(Int(rowA[i]) - Int(rowB[i]))) }
        }
        return largest
    }

    /// Mean difference of the premultiplied RGBA samples of two bitmaps of one size.
    static func meanDifference(_ a: Bitmap, _ b: Bitmap) -> Double {
        precondition(a.size == b.size)
        var total = 0
        for y in 0..<a.height {
            let rowA = a.row(y), rowB = b.row(y)
            for i in 0..<(a.width * 4) { total += abs(Int(rowA[i]) - Int(rowB[i])) }
        }
        return Double(total) / Double(a.width * a.height * 4)
    }

    /// A corpus JPEG whose EXIF says "rotate 90° clockwise" (orientation 6), re-encoded by `encoder`, checked
    /// against our JPEG decode of the original: same upright size, close pixels, and the stored size when
    /// orientation is not applied. The encoders carry the orientation over (cjxl into the codestream header,
    /// avifenc as the EXIF item).
    static func checkCarriedOrientation(_ encoder: String, arguments: [String], output: String, meanTolerance: Double) throws {
        let original = Corpus.url("conformance/jpeg/exif-orientation/Landscape_6.jpg")
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try encode(encoder, inputs: [original.path], arguments: arguments, output: output, in: directory)
        let reference = try CodecCatalogue.shared.decode(Data(contentsOf: original))
        let decoded = try CodecCatalogue.shared.decode(file)
        #expect(decoded.properties.orientation == .right)
        #expect(decoded.properties.dimensions == reference.properties.dimensions)
        #expect(meanDifference(decoded.container.bitmap, reference.container.bitmap) <= meanTolerance)
        let stored = try CodecCatalogue.shared.decode(file, configuration: DecoderConfiguration(appliesOrientation: false))
        #expect(stored.container.bitmap.size == ImageOrientation.right.displayedSize(ofStored: reference.properties.dimensions))
    }

    /// Feeds `data` to a fresh session in `chunk`-byte pieces; returns the session, the progress after each
    /// append, and whether a render was available before the last byte.
    static func feed(_ decoder: any ImageDecoder, _ data: Data, chunk: Int) throws
        -> (session: any ImageDecodingSession, progress: [DecoderProgress], previewBeforeEnd: Bool) {
        let session = decoder.makeSession(configuration: .default, expectedByteCount: data.count)
        var progress: [DecoderProgress] = []
        var previewBeforeEnd = false
        var offset = 0
        while offset < data.count {
            let end = min(offset + chunk, data.count)
            progress.append(try session.append(Data(data[offset..<end])))
            if end < data.count, try session.render(.fullFrameProgress, target: .original) != nil { previewBeforeEnd = true }
            offset = end
        }
        _ = try session.finish()
        return (session, progress, previewBeforeEnd)
    }
}
