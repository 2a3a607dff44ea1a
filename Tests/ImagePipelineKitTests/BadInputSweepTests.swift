import Foundation
import Testing
import TestSupport
@testable import ImagePipelineKit

/// What the corpus manifest says a decoder must do with one file of `bad/`.
struct BadFileExpectation {
    let path: String
    let expected: String

    /// "reject…"/"limit…" without an alternative ("or", "(or", "-or-") must end in an error.
    var mustFail: Bool {
        (expected.hasPrefix("reject") || expected.hasPrefix("limit"))
            && !expected.contains(" or ") && !expected.contains("(or ") && !expected.contains("-or-")
    }
    /// "limit…" without an alternative must be refused by the decoding limits, not by luck elsewhere.
    var mustHitLimit: Bool { expected.hasPrefix("limit") && mustFail }

    /// Rows of MANIFEST.md whose file lies under `bad/`.
    static func all() throws -> [BadFileExpectation] {
        let manifest = try String(contentsOf: Corpus.url("MANIFEST.md"), encoding: .utf8)
        return manifest.split(separator: "\n").compactMap { line in
            let columns = line.split(separator: "|", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard columns.count >= 9, columns[1].hasPrefix("`bad/") else { return nil }
            return BadFileExpectation(path: String(columns[1].dropFirst().dropLast()), expected: columns[6])
        }
    }
}

@Suite("Bad input sweep (../shared/corpus/bad)", .enabled(if: Corpus.isAvailable, Corpus.missingMessage))
struct BadInputSweepTests {
    /// Generous wall-clock guard against hangs in a debug build on a busy 2-core machine; the 1 s per file
    /// budget is read from `decodeMs` and reported, not asserted here (timing does not belong in pass/fail).
    static let hangGuardSeconds = 10.0
    static let memoryCeiling = 256 << 20

    @Test("Every bad file ends in a typed error or an allowed partial image: no signal, no exit(), no hang, < 256 MB")
    func sweep() async throws {
        let cli = try #require(ChildProcess.sampleCLI, "sample-cli not built: run `swift build` (make test does)")
        let expectations = try BadFileExpectation.all()
        let files = Set(Corpus.files(under: "bad"))
        #expect(expectations.count == files.count, "manifest rows and files under bad/ differ")
        var slowest = (file: "", ms: 0.0)
        for expectation in expectations where files.contains(expectation.path) {
            let outcome = try await ChildProcess.run(
                cli, ["decode", "--json", Corpus.url(expectation.path).path], timeout: Self.hangGuardSeconds)
            let name = expectation.path
            #expect(!outcome.timedOut, "\(name): still running after \(Self.hangGuardSeconds) s")
            #expect(outcome.signal == nil, "\(name): killed by signal \(outcome.signal ?? 0)")
            #expect(outcome.exitCode == 0 || outcome.exitCode == 1, "\(name): exit code \(outcome.exitCode ?? -1)")
            #expect(outcome.peakResidentBytes < Self.memoryCeiling, "\(name): peak RSS \(outcome.peakResidentBytes >> 20) MiB")
            guard let line = outcome.stdout.split(separator: "\n").first,
                  let report = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            else {
                Issue.record("\(name): no JSON report")
                continue
            }
            if let ms = report["decodeMs"] as? Double, ms > slowest.ms { slowest = (name, ms) }
            if let code = report["errorCode"] as? Int {
                #expect((1...5).contains(code), "\(name): error code \(code) is not a decoding error")
                if expectation.mustHitLimit { #expect(code == 5, "\(name): expected limitExceeded, got \(report["errorName"] ?? "")") }
            } else {
                #expect(!expectation.mustFail, "\(name): decoded, but the manifest says \(expectation.expected)")
            }
        }
        // stderr, unbuffered: the line appears in order, before the runner's closing line.
        FileHandle.standardError.write(Data(
            "bad-input sweep: \(expectations.count) files; slowest successful decode \(slowest.file) \(slowest.ms) ms\n".utf8))
    }
}
