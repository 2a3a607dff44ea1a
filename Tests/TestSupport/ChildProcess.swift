import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a program and reports how it ended, with its peak memory: what a bad-input sweep needs to tell a
/// typed error from a crash, an `exit()` from inside a C library, a hang or a memory blow-up.
public struct ChildProcess {
    public struct Outcome: Sendable {
        public var stdout: String
        /// Exit status when the process exited normally.
        public var exitCode: Int32?
        /// Signal that ended it (a crash, or our SIGKILL after the deadline).
        public var signal: Int32?
        public var timedOut: Bool
        /// Peak resident set in bytes: the child's `VmHWM`, read while it runs. (`wait4`'s `ru_maxrss` would
        /// be wrong here: exec folds the spawning process's own peak into it, so it reports the test runner.)
        public var peakResidentBytes: Int
    }

    /// Starts `executable` with `arguments`, waits at most `timeout` seconds (then SIGKILLs it). The wait
    /// polls on a Dispatch thread, never on a cooperative one (see `offloaded`).
    public static func run(_ executable: String, _ arguments: [String], timeout: Double) async throws -> Outcome {
        try await offloaded { try runBlocking(executable, arguments, timeout: timeout) }
    }

    private static func runBlocking(_ executable: String, _ arguments: [String], timeout: Double) throws -> Outcome {
        let outputPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("ipk-child-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).out").path
        defer { unlink(outputPath) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard status == 0 else { throw POSIXError(POSIXErrorCode(rawValue: status) ?? .EINVAL) }

        let deadline = Date().addingTimeInterval(timeout)
        var waitStatus: Int32 = 0
        var timedOut = false
        var peakResidentBytes = 0
        while true {
            // Monotonic while the process lives; gone once it exits, so the last reading stands.
            if let reading = Self.peakResidentBytes(of: pid) { peakResidentBytes = reading }
            let result = waitpid(pid, &waitStatus, WNOHANG)
            if result == pid { break }
            if Date() > deadline, !timedOut {
                timedOut = true
                kill(pid, SIGKILL)
            }
            usleep(2_000)
        }
        // WIFEXITED / WTERMSIG are macros that do not import: decode the status word by hand.
        let terminatingSignal = waitStatus & 0x7F
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return Outcome(
            stdout: output,
            exitCode: terminatingSignal == 0 ? (waitStatus >> 8) & 0xFF : nil,
            signal: terminatingSignal == 0 ? nil : terminatingSignal,
            timedOut: timedOut,
            peakResidentBytes: peakResidentBytes)
    }

    /// `VmHWM` of a running process, from `/proc/PID/status`.
    private static func peakResidentBytes(of pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        return kilobytes * 1024
    }

    /// The `sample-cli` built next to the test bundle (`make test` builds every product first).
    public static var sampleCLI: String? { SampleCLIBinary.path }
}
