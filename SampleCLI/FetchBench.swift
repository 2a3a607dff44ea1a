import ArgumentParser
import Dispatch
import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
import PipelineLocking
#endif

/// `sample-cli bench fetch`: download throughput. How many complete 200 KiB downloads a second each
/// `ImageDownloader` gets from the loopback origin, as a ratio to `wrk` against the same server and URL in
/// the same run (`scripts/bench-fetch.sh` installs wrk and runs this).
struct FetchBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Requests/s of each downloader fetching one image from the in-process loopback origin, against wrk.",
        discussion: """
            Starts an ImageOriginServer on 127.0.0.1 in this process, serving --bytes of a real JPEG (the \
            bundled skimage-hubble_deep_field.jpg, or --source, truncated or zero-padded to the size) at \
            /bench/image.jpg. Then, one phase after another, never overlapping: for each concurrency level \
            and each downloader, a --warmup of unmeasured downloads, then --seconds of wall clock during \
            which exactly N downloads are in flight (a new one starts as soon as one completes, until the \
            time is up; the ones in flight then finish and count). Every completed download must be a 200 \
            with exactly --bytes body bytes: any failure or wrong length stops the bench with an error \
            (exit 1). Reported per phase: requests/s (completed downloads over the time until the last one \
            ended), p50 and p99 latency from startDownload to the completion callback, MB/s (10^6 bytes), \
            and the number of connections the server accepted during the phase (connection reuse). \
            \n\nThe anchor: for each concurrency level N, `wrk -t1 -c1` (N = 1) or `wrk -t2 -cN`, for \
            --seconds rounded to whole seconds (wrk's resolution), runs as a subprocess against the same URL \
            right after the downloaders of that level. With urlsession measured, a second anchor runs beside \
            it: `urlsession-bare`, URLSession itself with the same settings and a plain completion-handler data \
            task, none of the library's code; URLSessionDownloader's rate is also given as a ratio to it, which \
            tells URLSession's own cost from the downloader's. The table gives each downloader's rate as a ratio to \
            the matching wrk run (the verdict; B11's target is at least 0.5x) and, for information, the \
            per-request overhead over wrk, 1/rate - 1/wrk_rate in microseconds (B11 asks for less than 100 µs, \
            but against nginx, which answered wrk -c1 in about 100 µs a request on this project's machine; this \
            origin is slower, so the overhead is not the verdict). Without wrk (not on PATH, no --wrk), \
            or with --no-wrk, only absolute numbers are printed. Everything shares the machine's cores: the server, the \
            downloader and wrk (which runs in another process) compete for CPU, as in the anchors. \
            \n\nOutput: one `key=value` line per phase (for scripts), then the table.
            """
    )

    enum DownloaderChoice: String, ExpressibleByArgument, CaseIterable {
        case urlsession, httpclient, both
    }

    @Option(help: "Which downloader to measure: urlsession (URLSessionDownloader), httpclient (HTTPClientDownloader) or both.")
    var downloader: DownloaderChoice = .both

    @Option(help: ArgumentHelp("Size of the served image.", valueName: "BYTES"))
    var bytes = 204_800

    @Option(help: ArgumentHelp("Measured wall-clock time of each phase (wrk gets it rounded to whole seconds, at least 1).",
                               valueName: "SECONDS"))
    var seconds = 5.0

    @Option(help: ArgumentHelp("Unmeasured downloads before each measured phase, at the phase's concurrency; 0 to skip.",
                               valueName: "SECONDS"))
    var warmup = 0.5

    @Option(help: ArgumentHelp("Comma-separated numbers of downloads kept in flight; each level is one phase per downloader and one wrk run.",
                               valueName: "N,N,..."))
    var concurrency = "1,16"

    @Option(help: ArgumentHelp("The wrk executable; default: `wrk` on PATH. Without one, absolute numbers only.",
                               valueName: "PATH"))
    var wrk: String?

    @Flag(help: "Skip the wrk anchor and print absolute numbers only (e.g. under a profiler, so wrk's load does not mix in).")
    var noWrk = false

    @Option(help: ArgumentHelp("The JPEG to serve (truncated or zero-padded to --bytes); default: the bundled skimage-hubble_deep_field.jpg.",
                               valueName: "FILE"))
    var source: String?

    @Option(help: ArgumentHelp("Connections per host each downloader may open; default: the downloader's own (URLSession 6, AsyncHTTPClient 8).",
                               valueName: "N"))
    var connectionsPerHost: Int?

    /// The parsed `--concurrency` levels.
    var levels: [Int] {
        concurrency.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    func validate() throws {
        guard bytes > 0 else { throw ValidationError("--bytes must be at least 1") }
        guard seconds > 0, seconds <= 3600 else { throw ValidationError("--seconds must be between 0 and 3600") }
        guard warmup >= 0, warmup <= 60 else { throw ValidationError("--warmup must be between 0 and 60") }
        let parts = concurrency.split(separator: ",", omittingEmptySubsequences: false)
        guard !parts.isEmpty, levels.count == parts.count, levels.allSatisfy({ (1...1024).contains($0) }) else {
            throw ValidationError("--concurrency must be comma-separated numbers between 1 and 1024, e.g. 1,16")
        }
        if let connectionsPerHost, connectionsPerHost < 1 {
            throw ValidationError("--connections-per-host must be at least 1")
        }
        if let wrk, !FileManager.default.isExecutableFile(atPath: wrk) {
            throw ValidationError("--wrk: not an executable file: \(wrk)")
        }
    }

    @OptionGroup var output: JSONOutput

    func run() async throws {
        let body = try Self.assetBytes(source: source, count: bytes)
        let wrkPath = noWrk ? nil : wrk ?? Self.executableOnPath("wrk")
        if wrkPath == nil && !noWrk {
            output.say("wrk not found on PATH (and no --wrk): printing absolute numbers only. "
                  + "Install it with `apt-get install wrk`, or run scripts/bench-fetch.sh.")
        }

        let server = try await ImageOriginServer.start(port: 0)
        // Hundreds of thousands of requests: keep no history, count and check them through the observer.
        server.setRequestLogCapacity(16)
        let tally = ServerTally(expectedBytes: bytes)
        server.setRequestObserver { record in tally.record(record) }
        server.setAsset(body, at: "/bench/image.jpg", contentType: "image/jpeg")
        let url = server.url(for: "/bench/image.jpg")

        var downloaders: [(name: String, downloader: any ImageDownloader)] = []
        var httpClient: HTTPClientDownloader?
        if downloader != .httpclient {
            downloaders.append(("urlsession", connectionsPerHost.map { URLSessionDownloader(maximumConnectionsPerHost: $0) }
                                                ?? URLSessionDownloader()))
            downloaders.append((Row.bareURLSession, BareURLSessionDownloader(maximumConnectionsPerHost: connectionsPerHost ?? 6)))
        }
        if downloader != .urlsession {
            var configuration = HTTPClientDownloader.defaultConfiguration()
            if let connectionsPerHost {
                configuration.connectionPool = .init(idleTimeout: .seconds(60),
                                                     concurrentHTTP1ConnectionsPerHostSoftLimit: connectionsPerHost)
            }
            let client = HTTPClientDownloader(configuration: configuration)
            httpClient = client
            downloaders.append(("httpclient", client))
        }

        output.say("serving \(bytes) bytes at \(url.absoluteString); \(String(format: "%g", seconds)) s per phase, "
              + "\(String(format: "%g", warmup)) s warm-up, concurrency \(levels.map(String.init).joined(separator: ","))")
        var rows: [Row] = []
        var failure: (any Error)?
        do {
            for level in levels {
                for (name, downloader) in downloaders {
                    if warmup > 0 {
                        _ = try await FetchLoad.run(downloader: downloader, name: name, url: url, expectedBytes: bytes,
                                                    concurrency: level, seconds: warmup)
                    }
                    let before = tally.snapshot()
                    let result = try await FetchLoad.run(downloader: downloader, name: name, url: url,
                                                         expectedBytes: bytes, concurrency: level, seconds: seconds)
                    let served = tally.snapshot().since(before)
                    try served.check(phase: "\(name) c\(level)")
                    let row = Row(name: name, concurrency: level, result: result, connections: served.connections)
                    output.say(row.keyValueLine)
                    rows.append(row)
                }
                if let wrkPath {
                    let before = tally.snapshot()
                    let result = try await WrkRun.run(path: wrkPath, url: url, concurrency: level, seconds: seconds)
                    let served = tally.snapshot().since(before)
                    // wrk closes its connections when its time is up, cutting short the responses then in flight.
                    try served.check(phase: "wrk c\(level)", allowingCutShort: level)
                    output.say(result.keyValueLine(connections: served.connections))
                    for index in rows.indices where rows[index].concurrency == level {
                        rows[index].wrk = result
                    }
                }
            }
        } catch {
            failure = error
        }
        // Shut down whatever happened: the client first (its connections close), then the server.
        try await httpClient?.shutdown()
        server.setRequestObserver(nil)
        try await server.shutdown()
        if let failure { throw failure }

        output.say("")
        output.say(Row.table(rows, withWrk: wrkPath != nil))
        for line in Row.againstBareURLSession(rows) { output.say(line) }
        try output.write(object: ["benchmark": "fetch", "bytes": bytes, "seconds": seconds, "rows": rows.map(\.json)])
    }

    // MARK: - The asset

    /// `count` bytes of a real JPEG: the file truncated, or followed by zeros (decoders stop at EOI).
    static func assetBytes(source: String?, count: Int) throws -> Data {
        let path: String
        if let source {
            path = source
        } else if let bundled = bundledImagePath("skimage-hubble_deep_field.jpg") {
            path = bundled
        } else {
            throw CommandFailure("the bundled skimage-hubble_deep_field.jpg was not found next to the executable "
                                  + "or under SampleCLI/Images; pass --source FILE")
        }
        var data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CommandFailure("cannot read \(path): \(error.localizedDescription)")
        }
        if data.count >= count { return data.prefix(count) }
        data.append(Data(count: count - data.count))
        return data
    }

    /// The bundled image's path, found without `Bundle.module` (whose accessor traps when the bundle is
    /// missing, e.g. for a copied executable): the resource bundle beside the executable, else the source tree.
    static func bundledImagePath(_ name: String) -> String? {
        let executableDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        var candidates: [String] = []
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: executableDirectory.path) {
            for entry in entries.sorted() where entry.hasSuffix("_SampleCLI.resources") {
                candidates.append(executableDirectory.appendingPathComponent(entry).appendingPathComponent("Images/\(name)").path)
            }
        }
        candidates.append("SampleCLI/Images/\(name)")
        return candidates.first { FileManager.default.isReadableFile(atPath: $0) }
    }

    static func executableOnPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

// MARK: - Errors

/// Why the fetch benchmark stopped.
enum FetchBenchError: Error, CustomStringConvertible {
    case downloadFailed(downloader: String, DownloadError)
    case unexpectedStatus(downloader: String, Int)
    case wrongLength(downloader: String, expected: Int, received: Int)
    case serverMismatch(phase: String, String)
    case wrkFailed(String)

    var description: String {
        switch self {
        case .downloadFailed(let name, let error): "\(name): a download failed: \(error)"
        case .unexpectedStatus(let name, let status): "\(name): a download got status \(status), expected 200"
        case .wrongLength(let name, let expected, let received):
            "\(name): a download delivered \(received) body bytes, expected \(expected)"
        case .serverMismatch(let phase, let detail): "\(phase): the server saw something wrong: \(detail)"
        case .wrkFailed(let detail): "wrk: \(detail)"
        }
    }
}

// MARK: - Report

/// One downloader at one concurrency level, with its wrk anchor once that has run.
struct Row {
    var name: String
    var concurrency: Int
    var result: FetchLoad.Result
    var connections: Int
    var wrk: WrkRun?

    static let targetRatio = 0.5
    static let targetOverheadMicroseconds = 100.0
    static let bareURLSession = "urlsession-bare"

    /// URLSessionDownloader's rate against URLSession used bare, per concurrency level.
    static func againstBareURLSession(_ rows: [Row]) -> [String] {
        rows.filter { $0.name == "urlsession" }.compactMap { ours in
            guard let bare = rows.first(where: { $0.name == bareURLSession && $0.concurrency == ours.concurrency }) else { return nil }
            return String(format: "urlsession c%d: %.2fx URLSession used bare, with none of the library's code (%.0f vs %.0f req/s)",
                          ours.concurrency, ours.result.requestsPerSecond / bare.result.requestsPerSecond,
                          ours.result.requestsPerSecond, bare.result.requestsPerSecond)
        }
    }

    var ratio: Double? { wrk.map { result.requestsPerSecond / $0.requestsPerSecond } }
    /// Extra wall time per request at the same concurrency: 1/rate - 1/wrk_rate.
    var overheadMicroseconds: Double? {
        wrk.map { 1e6 / result.requestsPerSecond - 1e6 / $0.requestsPerSecond }
    }

    /// The row for `--json`.
    var json: [String: Any] {
        var object: [String: Any] = [
            "downloader": name, "concurrency": concurrency, "requests": result.completed,
            "requestsPerSecond": result.requestsPerSecond, "p50Microseconds": result.percentileMicroseconds(0.5),
            "p99Microseconds": result.percentileMicroseconds(0.99), "megabytesPerSecond": result.megabytesPerSecond,
            "connections": connections,
        ]
        if let wrk { object["wrkRequestsPerSecond"] = wrk.requestsPerSecond }
        if let ratio { object["ratioToWrk"] = ratio }
        return object
    }

    var keyValueLine: String {
        "phase=\(name)\tconcurrency=\(concurrency)\trequests=\(result.completed)"
            + "\tseconds=\(String(format: "%.3f", result.elapsedSeconds))"
            + "\treq_s=\(String(format: "%.0f", result.requestsPerSecond))"
            + "\tp50_us=\(String(format: "%.0f", result.percentileMicroseconds(0.5)))"
            + "\tp99_us=\(String(format: "%.0f", result.percentileMicroseconds(0.99)))"
            + "\tmb_s=\(String(format: "%.0f", result.megabytesPerSecond))\tconnections=\(connections)"
    }

    static func table(_ rows: [Row], withWrk: Bool) -> String {
        func pad(_ text: String, _ width: Int) -> String {
            text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
        }
        var lines: [String] = []
        var header = ["downloader".padding(toLength: 15, withPad: " ", startingAt: 0), pad("conc", 4), pad("req/s", 8),
                      pad("p50 µs", 8), pad("p99 µs", 8), pad("MB/s", 6), pad("conns", 5)]
        if withWrk {
            header += [pad("wrk req/s", 9), pad("wrk p50", 8), pad("ratio", 6), pad("target", 6),
                       pad("overhead µs/req", 15), pad("B11", 4)]
        }
        lines.append(header.joined(separator: "  "))
        for row in rows {
            var cells = [row.name.padding(toLength: 15, withPad: " ", startingAt: 0), pad("\(row.concurrency)", 4),
                         pad(String(format: "%.0f", row.result.requestsPerSecond), 8),
                         pad(String(format: "%.0f", row.result.percentileMicroseconds(0.5)), 8),
                         pad(String(format: "%.0f", row.result.percentileMicroseconds(0.99)), 8),
                         pad(String(format: "%.0f", row.result.megabytesPerSecond), 6), pad("\(row.connections)", 5)]
            if withWrk {
                if let wrk = row.wrk, let ratio = row.ratio, let overhead = row.overheadMicroseconds {
                    let meets = ratio >= targetRatio
                    cells += [pad(String(format: "%.0f", wrk.requestsPerSecond), 9),
                              pad(wrk.p50Microseconds.map { String(format: "%.0f", $0) } ?? "?", 8),
                              pad(String(format: "%.2fx", ratio), 6), pad(String(format: ">=%.1fx", targetRatio), 6),
                              pad(String(format: "%.0f", overhead), 15), pad(meets ? "ok" : "MISS", 4)]
                } else {
                    cells += [pad("-", 9), pad("-", 8), pad("-", 6), pad("-", 6), pad("-", 15), pad("-", 4)]
                }
            }
            lines.append(cells.joined(separator: "  "))
        }
        if withWrk {
            lines.append("ratio = req/s ÷ wrk req/s at the same concurrency (wrk -t1 -c1 for 1, -t2 -cN otherwise); "
                         + "B11 = ratio >= \(targetRatio)x. overhead = 1/req_s - 1/wrk_req_s, for information: B11's "
                         + "< \(Int(targetOverheadMicroseconds)) µs was set against nginx (≈100 µs a request there), and this "
                         + "origin is slower.")
        }
        return lines.joined(separator: "\n")
    }
}
