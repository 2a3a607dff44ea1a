import Foundation

/// One `wrk` run as a subprocess, and what it printed.
struct WrkRun {
    var threads: Int
    var connections: Int
    var requestsPerSecond: Double
    var p50Microseconds: Double?
    var p99Microseconds: Double?
    var transfer: String?

    func keyValueLine(connections accepted: Int) -> String {
        "phase=wrk\tconcurrency=\(connections)\tthreads=\(threads)\treq_s=\(String(format: "%.0f", requestsPerSecond))"
            + "\tp50_us=\(p50Microseconds.map { String(format: "%.0f", $0) } ?? "?")"
            + "\tp99_us=\(p99Microseconds.map { String(format: "%.0f", $0) } ?? "?")"
            + "\ttransfer_s=\(transfer ?? "?")\tconnections=\(accepted)"
    }

    static func run(path: String, url: URL, concurrency: Int, seconds: Double) async throws -> WrkRun {
        let threads = concurrency == 1 ? 1 : 2
        let duration = max(1, Int(seconds.rounded()))
        let arguments = ["-t\(threads)", "-c\(concurrency)", "-d\(duration)s", "--latency", url.absoluteString]
        // wrk blocks for the whole phase: wait for it on a thread of its own, not on the cooperative pool.
        let output: String = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Swift.Result { try Self.execute(path: path, arguments: arguments) })
            }
        }
        guard var run = parse(output) else {
            throw FetchBenchError.wrkFailed("no Requests/sec in its output:\n\(output)")
        }
        if output.contains("Non-2xx or 3xx responses") || output.contains("Socket errors") {
            throw FetchBenchError.wrkFailed("errors in its run:\n\(output)")
        }
        run.threads = threads
        run.connections = concurrency
        return run
    }

    private static func execute(path: String, arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do {
            try process.run()
        } catch {
            throw FetchBenchError.wrkFailed("cannot start \(path): \(error.localizedDescription)")
        }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let output = String(decoding: data, as: UTF8.self)
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw FetchBenchError.wrkFailed("\(path) \(arguments.joined(separator: " ")) exited with status "
                                            + "\(process.terminationStatus):\n\(output)")
        }
        return output
    }

    /// Reads `Requests/sec:`, `Transfer/sec:` and the `--latency` distribution's 50% and 99% lines.
    static func parse(_ output: String) -> WrkRun? {
        var rate: Double?
        var run = WrkRun(threads: 0, connections: 0, requestsPerSecond: 0)
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2 else { continue }
            switch fields[0] {
            case "Requests/sec:": rate = Double(fields[1])
            case "Transfer/sec:": run.transfer = String(fields[1])
            case "50%": run.p50Microseconds = microseconds(fields[1])
            case "99%": run.p99Microseconds = microseconds(fields[1])
            default: break
            }
        }
        guard let rate else { return nil }
        run.requestsPerSecond = rate
        return run
    }

    /// `95.12us`, `1.20ms`, `2.00s`, `3.00m` → microseconds.
    static func microseconds(_ text: Substring) -> Double? {
        for (unit, factor) in [("us", 1.0), ("ms", 1e3), ("s", 1e6), ("m", 60e6), ("h", 3600e6)] where text.hasSuffix(unit) {
            return Double(text.dropLast(unit.count)).map { $0 * factor }
        }
        return nil
    }
}
