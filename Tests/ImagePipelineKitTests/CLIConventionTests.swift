import Foundation
import ImagePipelineKit
import TestSupport
import Testing

/// sample-cli's conventions: --json and --json-file on a reporting command, --version, exit statuses, and
/// `decode --out` writing the format its extension names.
@Suite("sample-cli conventions", .enabled(if: SampleCLIBinary.path != nil, "sample-cli is not built next to the tests"))
struct CLIConventionTests {
    static let photo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("SampleCLI/Images/skimage-rocket.jpg").path

    static func temporary(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("ipk-cli-\(UUID().uuidString)-\(name)").path
    }

    @Test("--version prints the library's version")
    func version() async throws {
        let run = try await SampleCLIBinary.run(["--version"])
        #expect(run.status == 0 && run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == LibraryVersion.version)
    }

    @Test("--json puts JSON alone on standard output; --json-file writes the same objects to a file")
    func jsonOutputs() async throws {
        let file = Self.temporary("decode.json")
        let run = try await SampleCLIBinary.run(["decode", Self.photo, "--json", "--json-file", file])
        #expect(run.status == 0)
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.count == 1 && run.jsonLines.count == 1, "only JSON on standard output: \(run.stdout)")
        #expect(run.jsonLines.first?["width"] as? Int == 640)
        #expect(!run.stderr.isEmpty, "the text report went to standard error")
        let written = try String(contentsOfFile: file, encoding: .utf8)
        #expect(written.split(separator: "\n") == lines)
        let textOnly = try await SampleCLIBinary.run(["decode", Self.photo, "--json-file", file])
        #expect(textOnly.jsonLines.isEmpty && textOnly.stdout.contains("640"), "without --json, text on standard output")
        try? FileManager.default.removeItem(atPath: file)
    }

    @Test("decode --out writes PNG, JPEG or WebP by the extension; another extension is a usage error (64)")
    func decodeOut() async throws {
        let magic: [(String, [UInt8])] = [("png", [0x89, 0x50, 0x4E, 0x47]), ("jpg", [0xFF, 0xD8, 0xFF]), ("webp", Array("RIFF".utf8))]
        for (ext, bytes) in magic {
            let out = Self.temporary("out.\(ext)")
            let run = try await SampleCLIBinary.run(["decode", Self.photo, "--target", "64x64", "--out", out])
            #expect(run.status == 0)
            let data = try Data(contentsOf: URL(fileURLWithPath: out))
            #expect(Array(data.prefix(bytes.count)) == bytes, ".\(ext)")
            #expect(try CodecCatalogue.shared.decode(data).container.dimensions == PixelSize(width: 64, height: 43))
            try? FileManager.default.removeItem(atPath: out)
        }
        let gif = try await SampleCLIBinary.run(["decode", Self.photo, "--out", Self.temporary("out.gif")])
        #expect(gif.status == 64 && gif.stderr.contains("Usage"))
    }

    @Test("a failure at run time exits 1 with the reason, without the usage text")
    func runtimeFailure() async throws {
        let missing = try await SampleCLIBinary.run(["decode", Self.temporary("missing.jpg")])
        #expect(missing.status == 1)
        #expect(!missing.stderr.contains("Usage"))
    }
}
