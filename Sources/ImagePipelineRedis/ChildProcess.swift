#if canImport(Glibc)
import Glibc
#endif
import PipelineLocking

/// A child process started with every signal unblocked and at its default action, and with no file descriptor
/// of this process but its standard input and outputs (sent to /dev/null). Foundation's `Process` passes on the
/// signal mask of the thread that starts it, and Dispatch's threads block `SIGTERM`: a server started that way
/// ignores the polite stop. Stopped and reaped by its own pid.
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
        // Nothing else of this process goes to the child. SwiftNIO's sockets are not close-on-exec: a child
        // that inherited them would hold a server's listening port and its connections open after the server
        // closed them, so that their clients never see the end of stream.
        Self.closeInheritedDescriptors(&actions)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard status == 0 else { throw ChildProcessError(errno: status) }
        self.pid = pid
    }

    /// Adds to `actions` the closing of every descriptor above the standard three: with glibc's
    /// `posix_spawn_file_actions_addclosefrom_np` (2.34 and later; Swift's Glibc module does not show it, so it
    /// is looked up by name), else one close per descriptor open now.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
            return
        }
        guard let directory = opendir("/proc/self/fd") else { return }
        defer { closedir(directory) }
        let listing = dirfd(directory)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let descriptor = Int32(name), descriptor > 2, descriptor != listing else { continue }
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
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
