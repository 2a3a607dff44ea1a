import Foundation
import Testing
import TestSupport
@testable import ImagePipelineKit

/// The bad-input sweep for AVIF and JPEG XL, on files broken in the test (the corpus has none): each goes
/// through `sample-cli decode --json` in its own process, so a crash, an `exit()` in a library, a hang or a
/// memory blow-up shows as such.
@Suite("Bad AVIF and JPEG XL input through sample-cli", .serialized,
       .enabled(if: ModernFormatFixtures.hasAVIFTools && ModernFormatFixtures.hasJXLTools, "avifenc or cjxl not installed: skipped"))
struct ModernFormatBadInputTests {
    static let hangGuardSeconds = 10.0
    static let memoryCeiling = 256 << 20

    /// Truncations at several lengths, patched sizes and dimension bombs of one AVIF and one JPEG XL.
    static func badFiles() throws -> [(name: String, data: Data, mustHitLimit: Bool)] {
        let avif = try AVIFCodecTests.avif(alpha: true)
        let jxl = try JPEGXLCodecTests.jxl(alpha: true)
        var files: [(String, Data, Bool)] = []
        for (name, file) in [("avif", avif), ("jxl", jxl)] {
            for fraction in [0.05, 0.25, 0.5, 0.75, 0.95] {
                files.append(("\(name) cut at \(Int(fraction * 100))%", file.prefix(Int(Double(file.count) * fraction)), false))
            }
        }
        files.append(("avif 9000x9000 bomb", try AVIFCodecTests.patchingDeclaredSize(of: avif, width: 9_000, height: 9_000), true))
        files.append(("avif 60000x60000 bomb", try AVIFCodecTests.patchingDeclaredSize(of: avif, width: 60_000, height: 60_000), true))
        files.append(("avif 300x200 patched", try AVIFCodecTests.patchingDeclaredSize(of: avif, width: 300, height: 200), false))
        files.append(("jxl 9000x9000 bomb", try JPEGXLSizeHeader.replacingSize(of: jxl, width: 9_000, height: 9_000), true))
        files.append(("jxl 60000x60000 bomb", try JPEGXLSizeHeader.replacingSize(of: jxl, width: 60_000, height: 60_000), true))
        files.append(("jxl 300x200 patched", try JPEGXLSizeHeader.replacingSize(of: jxl, width: 300, height: 200), false))
        return files
    }

    @Test("Every broken file ends in a typed error or a partial image: no signal, no hang, < 256 MB; bombs hit the limits")
    func sweep() async throws {
        let cli = try #require(ChildProcess.sampleCLI, "sample-cli not built: run `swift build` (make test does)")
        let directory = try ModernFormatFixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for (index, file) in try Self.badFiles().enumerated() {
            let url = directory.appendingPathComponent("bad\(index)")
            try file.data.write(to: url)
            let outcome = try await ChildProcess.run(cli, ["decode", "--json", url.path], timeout: Self.hangGuardSeconds)
            #expect(!outcome.timedOut, "\(file.name): still running after \(Self.hangGuardSeconds) s")
            #expect(outcome.signal == nil, "\(file.name): killed by signal \(outcome.signal ?? 0)")
            #expect(outcome.exitCode == 0 || outcome.exitCode == 1, "\(file.name): exit code \(outcome.exitCode ?? -1)")
            #expect(outcome.peakResidentBytes < Self.memoryCeiling, "\(file.name): peak RSS \(outcome.peakResidentBytes >> 20) MiB")
            guard let line = outcome.stdout.split(separator: "\n").first,
                  let report = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            else {
                Issue.record("\(file.name): no JSON report")
                continue
            }
            if let code = report["errorCode"] as? Int {
                #expect((1...5).contains(code), "\(file.name): error code \(code)")
                if file.mustHitLimit { #expect(code == 5, "\(file.name): \(report["error"] ?? "")") }
            } else {
                #expect(!file.mustHitLimit, "\(file.name): decoded")
                #expect(["avif", "jxl"].contains(report["format"] as? String), "\(file.name): \(report)")
            }
        }
    }
}
