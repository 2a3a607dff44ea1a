import Foundation
import Synchronization
import PipelineLocking

/// The `sample-cli` built next to the test bundle (`make test` builds every product first), and a way to run it.
public enum SampleCLIBinary {
    /// Its path, or `nil` when the build did not make it.
    public static let path: String? = {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent("sample-cli").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }()

    /// How one run ended.
    public struct Run: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String

        /// Each stdout line parsed as a JSON object (lines that are not one are skipped).
        public var jsonLines: [[String: any Sendable]] {
            stdout.split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: any Sendable]
            }
        }
    }

    /// Runs `sample-cli` with `arguments` to its end (on a thread of its own, see ``offloaded(_:)``).
    /// - Parameter fileSizeLimitKiB: when set, no file the process writes may grow past this (`ulimit -f`, with
    ///   `SIGXFSZ` ignored): writes past it fail with `EFBIG`, as on a disk that filled up.
    public static func run(_ arguments: [String], fileSizeLimitKiB: Int? = nil) async throws -> Run {
        guard let path else { throw CocoaError(.fileNoSuchFile) }
        return try await offloaded {
            let process = Process()
            if let fileSizeLimitKiB {
                // An ignored signal stays ignored across exec, so the limit fails writes instead of killing.
                process.executableURL = URL(fileURLWithPath: "/bin/sh")
                process.arguments = ["-c", "trap '' XFSZ; ulimit -f \(fileSizeLimitKiB); exec \"$0\" \"$@\"", path] + arguments
            } else {
                process.executableURL = URL(fileURLWithPath: path)
                process.arguments = arguments
            }
            let output = Pipe(), errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            // Read both to their end before waiting: a full pipe would otherwise block the child forever.
            let stderrData = Locked(Data())
            let reading = DispatchGroup()
            DispatchQueue(label: "TestSupport.stderr").async(group: reading) {
                let data = errors.fileHandleForReading.readDataToEndOfFile()
                stderrData.withLock { $0 = data }
            }
            let stdout = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            reading.wait()
            return Run(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                       stderr: String(decoding: stderrData.withLock { $0 }, as: UTF8.self))
        }
    }

    /// Runs `sample-cli` with `arguments` to its end (at most five minutes) and reports the most memory it ever
    /// held, its `VmHWM` (see ``ChildProcess``). Its standard error is not kept.
    public static func runMeasuringMemory(_ arguments: [String]) async throws -> (run: Run, peakResidentBytes: Int) {
        guard let path else { throw CocoaError(.fileNoSuchFile) }
        let outcome = try await ChildProcess.run(path, arguments, timeout: 300)
        let status = outcome.exitCode ?? 128 + (outcome.signal ?? 0)
        return (Run(status: status, stdout: outcome.stdout, stderr: ""), outcome.peakResidentBytes)
    }
}
