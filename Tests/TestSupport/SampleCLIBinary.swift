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

    /// Runs `sample-cli` with `arguments` to its end and reports the most memory it ever held (the kernel's
    /// peak resident set size, from `wait4`). Spawned directly rather than through `Process`, which reaps its
    /// children itself and so hides their resource usage. Standard output goes to a file, read after the exit.
    public static func runMeasuringMemory(_ arguments: [String]) async throws -> (run: Run, peakResidentBytes: Int) {
        guard let path else { throw CocoaError(.fileNoSuchFile) }
        return try await offloaded {
            let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("sample-cli-\(UUID().uuidString).out").path
            defer { try? FileManager.default.removeItem(atPath: outputPath) }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            let argv = ([path] + arguments).map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) } }
            var pid: pid_t = 0
            let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
            guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
            var status: Int32 = 0
            var usage = rusage()
            while wait4(pid, &status, 0, &usage) < 0 {
                guard errno == EINTR else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            }
            let exitStatus = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            let stdout = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            // ru_maxrss is in kilobytes on Linux.
            return (Run(status: exitStatus, stdout: stdout, stderr: ""), Int(usage.ru_maxrss) * 1024)
        }
    }
}
