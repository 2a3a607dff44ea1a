import ArgumentParser
import Dispatch
import Foundation
import ImageOriginServer
import Synchronization
#if canImport(Glibc)
import Glibc
import PipelineLocking
#endif

/// `sample-cli serve`: the loopback origin the tests use, serving a directory until interrupted.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a directory over HTTP/1.1 on 127.0.0.1 (Range, If-Range, shaping) until SIGINT/SIGTERM.",
        discussion: """
            Prints the base URL (http://127.0.0.1:PORT) on the first line of stdout once listening. Files \
            are read from disk for each request, with Content-Type from the extension, Last-Modified from \
            the file, a strong content-hash ETag and Accept-Ranges: bytes; single byte ranges get 206, \
            unsatisfiable ones 416, a stale If-Range the whole body; a conditional GET whose If-None-Match or \
            If-Modified-Since still matches gets 304 and no body. Paths that try to leave DIR get 400. \
            --rate caps each response's body bandwidth, --latency delays each response head. With --log, \
            writes one JSON object per completed request: {sequence, connection, method, path, query, \
            status, bytesSent, clientWentAway, range, ifRange, receivedAt, durationMs, headers: [{name, \
            value}]}. Exits 0 after a clean shutdown.
            """
    )

    @Argument(help: "The directory to serve.")
    var directory: String

    @Option(help: "The port to listen on; 0 lets the system choose one.")
    var port = 0

    @Option(help: ArgumentHelp("Cap each response body at this many bytes per second.", valueName: "BYTES/s"))
    var rate: Int?

    @Option(help: ArgumentHelp("Delay each response head by this many milliseconds.", valueName: "MS"))
    var latency: Int?

    @Option(help: ArgumentHelp("Append one JSON line per completed request to this file.", valueName: "FILE"))
    var log: String?

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        if let rate, rate < 1 { throw ValidationError("--rate must be at least 1 byte per second") }
        if let latency, latency < 0 { throw ValidationError("--latency must not be negative") }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("not a directory: \(directory)")
        }
    }

    func run() async throws {
        // Ignore the default action first so a signal arriving during start-up is not lost to a kill.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let stop = TerminationSignal(signals: [SIGINT, SIGTERM])

        let server: ImageOriginServer
        do {
            server = try await ImageOriginServer.start(port: port, directory: directory)
        } catch let error as OriginServerError {
            throw CommandFailure(error.description)
        }
        // A long-running server keeps no in-memory history: the --log file is the record.
        server.setRequestLogCapacity(64)
        if rate != nil || latency != nil {
            server.setShaping(OriginShaping(bytesPerSecond: rate, firstByteLatency: .milliseconds(latency ?? 0)), for: nil)
        }
        if let log {
            let writer = try RequestLogWriter(path: log)
            server.setRequestObserver { record in writer.append(record) }
        }
        // Scripts wait for this line: write it unbuffered, whatever stdout is connected to.
        FileHandle.standardOutput.write(Data((server.baseURL.absoluteString + "\n").utf8))
        FileHandle.standardError.write(Data("serving \((server.directory ?? directory).terminalSafe) at \(server.baseURL.absoluteString); Ctrl-C stops\n".utf8))

        let received = await stop.wait()
        FileHandle.standardError.write(Data("signal \(received): shutting down\n".utf8))
        try await server.shutdown()
        server.setRequestObserver(nil)
    }
}

/// Waits for the first of some signals, delivered through Dispatch sources (never a C signal handler).
private final class TerminationSignal: Sendable {
    private struct State {
        var received: Int32?
        var continuation: CheckedContinuation<Int32, Never>?
    }

    private let state = Locked(State())
    // Dispatch sources are thread-safe; kept only so they stay alive.
    private nonisolated(unsafe) let sources: [any DispatchSourceSignal]

    init(signals: [Int32]) {
        let queue = DispatchQueue(label: "sample-cli.serve.signals")
        var sources: [any DispatchSourceSignal] = []
        for number in signals {
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            sources.append(source)
        }
        self.sources = sources
        for (source, number) in zip(sources, signals) {
            source.setEventHandler { [weak self] in self?.deliver(number) }
            source.resume()
        }
    }

    /// The first signal received (at once if one already arrived).
    func wait() async -> Int32 {
        await withCheckedContinuation { continuation in
            let received = state.withLock { state -> Int32? in
                if let received = state.received { return received }
                state.continuation = continuation
                return nil
            }
            if let received { continuation.resume(returning: received) }
        }
    }

    private func deliver(_ number: Int32) {
        let continuation = state.withLock { state -> CheckedContinuation<Int32, Never>? in
            guard state.received == nil else { return nil }
            state.received = number
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: number)
    }
}

/// Appends one JSON object per completed request to a file, on its own queue (the observer is called on an
/// event-loop thread, which must not wait for the disk).
private final class RequestLogWriter: Sendable {
    private struct Line: Encodable {
        struct Header: Encodable {
            var name: String
            var value: String
        }

        var sequence: Int
        var connection: Int
        var method: String
        var path: String
        var query: String?
        var status: Int
        var bytesSent: Int
        var clientWentAway: Bool
        var range: String?
        var ifRange: String?
        var receivedAt: String
        var durationMs: Double
        var headers: [Header]
    }

    private let queue = DispatchQueue(label: "sample-cli.serve.log")
    /// Written only on `queue`.
    private let handle: FileHandle

    init(path: String) throws {
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw CommandFailure("cannot create --log file \(path)")
            }
        }
        guard let handle = FileHandle(forWritingAtPath: path) else { throw CommandFailure("cannot open --log file \(path)") }
        handle.seekToEndOfFile()
        self.handle = handle
    }

    func append(_ record: OriginRequestRecord) {
        let line = Line(
            sequence: record.sequence, connection: record.connection, method: record.method, path: record.path,
            query: record.query, status: record.status, bytesSent: record.bytesSent,
            clientWentAway: record.clientWentAway, range: record.range, ifRange: record.ifRange,
            receivedAt: ISO8601DateFormatter.string(from: record.receivedAt, timeZone: .gmt,
                                                    formatOptions: [.withInternetDateTime, .withFractionalSeconds]),
            durationMs: ((record.completedAt ?? record.receivedAt).timeIntervalSince(record.receivedAt) * 10_000).rounded() / 10,
            headers: record.headers.map { Line.Header(name: $0.name, value: $0.value) })
        queue.async { [handle] in
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            guard var data = try? encoder.encode(line) else { return }
            data.append(0x0A)
            handle.write(data)
        }
    }

    deinit {
        queue.sync { try? handle.synchronize() }
    }
}
