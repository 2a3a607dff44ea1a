import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a program and reports how it ended, with its peak memory: what a bad-input sweep needs to tell a
/// typed error from a crash, an `exit()` from inside a C library, a hang or a memory blow-up.
struct ChildProcess {
    struct Outcome {
        var stdout: String
        /// Exit status when the process exited normally.
        var exitCode: Int32?
        /// Signal that ended it (a crash, or our SIGKILL after the deadline).
        var signal: Int32?
        var timedOut: Bool
        /// Peak resident set in bytes (`ru_maxrss`).
        var peakResidentBytes: Int
    }

    /// Starts `executable` with `arguments`, waits at most `timeout` seconds (then SIGKILLs it).
    static func run(_ executable: String, _ arguments: [String], timeout: Double) throws -> Outcome {
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
        var usage = rusage()
        var timedOut = false
        while true {
            let result = wait4(pid, &waitStatus, WNOHANG, &usage)
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
            peakResidentBytes: usage.ru_maxrss * 1024)
    }

    /// The `sample-cli` built next to the test bundle (`make test` builds every product first).
    static var sampleCLI: String? {
        var directory = Bundle.module.bundleURL.deletingLastPathComponent()
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent("sample-cli").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }
}
