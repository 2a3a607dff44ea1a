import Foundation
import Testing
import TestSupport
@testable import ImagePipelineKit

@Suite("Disk cache crash safety (SIGKILL at random moments)")
struct CrashSafetyTests {
    @Test("24 kills of a process writing two pipelines: nothing read back differs from what was stored, totals match the files, limits hold")
    func killRepeatedly() async throws {
        let cli = try #require(ChildProcess.sampleCLI, "sample-cli not built: run `swift build` (make test does)")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-crash-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        var generator = SystemRandomNumberGenerator()
        for round in 0..<24 {
            // The workload never ends on its own: ChildProcess sends SIGKILL at the deadline.
            let deadline = Double.random(in: 0.05...0.5, using: &generator)
            let run = try await ChildProcess.run(cli, ["cache-torture", root, "--seed", "\(round + 1)"], timeout: deadline)
            #expect(run.signal == 9, "round \(round): the workload ended by itself (exit \(run.exitCode ?? -1))")
            let check = try await ChildProcess.run(cli, ["cache-torture", root, "--verify"], timeout: 30)
            #expect(check.exitCode == 0, "round \(round): \(check.stdout)")
        }
    }
}
