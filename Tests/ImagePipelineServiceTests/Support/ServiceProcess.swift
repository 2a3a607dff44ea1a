import Foundation
import Synchronization
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The `image-service` binary built next to the tests, run as a real process.
final class ServiceProcess: @unchecked Sendable {
    // @unchecked: `process` is only started in `start` and read after; Foundation's Process is thread-safe for that.

    /// The binary's path, or `nil` when the build did not make it.
    static let binary: String? = {
        var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent("image-service").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }()

    let process: Process
    /// `http://127.0.0.1:PORT`, from the first line the service prints.
    let baseURL: String
    private let errors: Pipe
    private let errorText: ErrorText

    /// What the service wrote to standard error so far (its log), up to its last 4 MiB.
    var log: String { errorText.text }

    /// Standard error as it is read.
    final class ErrorText: Sendable {
        private let bytes = Mutex(Data())

        func append(_ chunk: Data) {
            bytes.withLock { bytes in
                bytes += chunk
                if bytes.count > 4 << 20 { bytes.removeFirst(bytes.count - (4 << 20)) }
            }
        }

        var text: String { String(decoding: bytes.withLock { $0 }, as: UTF8.self) }
    }

    private init(process: Process, baseURL: String, errors: Pipe, errorText: ErrorText) {
        self.process = process
        self.baseURL = baseURL
        self.errors = errors
        self.errorText = errorText
    }

    /// Starts the service with `arguments` (`--port 0` is added) and waits for its `listening on` line.
    static func start(_ arguments: [String], environment: [String: String] = [:]) async throws -> ServiceProcess {
        guard let binary else { throw CocoaError(.fileNoSuchFile) }
        return try await offloaded {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["--port", "0", "--host", "127.0.0.1"] + arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let output = Pipe(), errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            // The log goes to a pipe: read it as it comes, so that the service never blocks on a full pipe.
            let errorText = ErrorText()
            errors.fileHandleForReading.readabilityHandler = { handle in errorText.append(handle.availableData) }
            try process.run()
            var line = Data()
            let handle = output.fileHandleForReading
            while !line.contains(UInt8(ascii: "\n")) {
                let chunk = handle.availableData
                guard !chunk.isEmpty else { break }
                line += chunk
            }
            let text = String(decoding: line, as: UTF8.self)
            guard let range = text.range(of: "listening on ") else {
                process.terminate()
                throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "no listening line: \(text)"])
            }
            let url = text[range.upperBound...].prefix { !$0.isWhitespace }
            return ServiceProcess(process: process, baseURL: String(url), errors: errors, errorText: errorText)
        }
    }

    /// Sends `signal` and waits for the process to end (at most `timeout` seconds, then SIGKILL); its exit status.
    func stop(signal: Int32 = SIGTERM, timeout: Double = 30) async -> Int32 {
        kill(process.processIdentifier, signal)
        let status = try? await offloaded { [process] () -> Int32 in
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                return -1
            }
            return process.terminationStatus
        }
        return status ?? -1
    }

    deinit {
        errors.fileHandleForReading.readabilityHandler = nil
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
