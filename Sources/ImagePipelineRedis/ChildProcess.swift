#if canImport(Glibc)
import Glibc
#endif
import PipelineLocking

/// A child process started with every signal unblocked and at its default action. Foundation's `Process` passes
/// on the signal mask of the thread that starts it, and Dispatch's threads block `SIGTERM`: a server started
/// that way ignores the polite stop. Stopped and reaped by its own pid.
final class ChildProcess: Sendable {
    let pid: pid_t
    private let exited = Locked(false)

    /// Starts `executable` with `arguments`, its stdout and stderr sent to /dev/null.
    init(executable: String, arguments: [String]) throws(ChildProcessError) {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard status == 0 else { throw ChildProcessError(errno: status) }
        self.pid = pid
    }

    /// Whether the process still runs (it is reaped once it ended).
    var isRunning: Bool {
        exited.withLock { exited in
            guard !exited else { return false }
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid || (result == -1 && errno == ECHILD) { exited = true }
            return !exited
        }
    }

    func signal(_ signal: Int32) {
        guard isRunning else { return }
        kill(pid, signal)
    }

    /// Blocks until the process ended, polling every 10 ms.
    func waitUntilExit() {
        while isRunning { usleep(10_000) }
    }
}

/// `posix_spawn` failed.
struct ChildProcessError: Error, CustomStringConvertible {
    let errno: Int32
    var description: String { "could not start the process: \(String(cString: strerror(errno)))" }
}
