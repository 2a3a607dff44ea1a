import Foundation
import PipelineLocking

/// One `sample-cli fleet-worker` child: started with its arguments, its stdout read line by line as it comes
/// (so that the fleet can act on an announcement), killed by its own pid when asked.
final class FleetProcess: Sendable {
    private let process: Process
    private let lines = Locked<[String]>([])
    private let finished = DispatchGroup()
    let pid: Int32

    /// Starts the worker; `onLine` runs (on a reading thread) for each stdout line.
    init(arguments: [String], onLine: @escaping @Sendable (String) -> Void) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["fleet-worker"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        self.process = process
        pid = process.processIdentifier
        finished.enter()
        Thread.detachNewThread { [self] in
            var pending = Data()
            let handle = output.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    self.lines.withLock { $0.append(line) }
                    onLine(line)
                }
            }
            self.finished.leave()
        }
    }

    /// Kills the worker at once (`SIGKILL`), as a crash would.
    func kill() {
        Glibc.kill(pid, SIGKILL)
    }

    /// Waits (on a thread of its own) for the worker to exit; its stdout lines parsed as JSON objects, and its
    /// exit status (a signal reads as 128 + the signal).
    func wait() async -> (lines: [[String: Any]], status: Int32) {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { [process, finished] in
                process.waitUntilExit()
                finished.wait()
                continuation.resume()
            }
        }
        let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        let objects = lines.withLock { $0 }.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
        return (objects, status)
    }
}
