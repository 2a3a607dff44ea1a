import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
import PipelineLocking
#endif

/// The two downloaders every behaviour test runs against.
enum DownloaderKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case urlSession
    case httpClient

    var testDescription: String { rawValue }

    /// A new downloader; `clientConnectTimeout` sets an owned HTTP client's own connect timeout (the one its
    /// shutdown waits for when a connect hangs).
    func makeDownloader(clientConnectTimeout: Duration? = nil) -> any ImageDownloader {
        switch self {
        case .urlSession:
            return URLSessionDownloader()
        case .httpClient:
            var configuration = HTTPClientDownloader.defaultConfiguration()
            if let clientConnectTimeout {
                configuration.timeout.connect = .nanoseconds(Int64(clientConnectTimeout.components.seconds) * 1_000_000_000)
            }
            return HTTPClientDownloader(configuration: configuration)
        }
    }
}

/// A loopback origin and a fresh downloader of one kind, torn down after the test body.
struct DownloadHarness {
    let kind: DownloaderKind
    let server: ImageOriginServer
    let downloader: any ImageDownloader

    /// Runs `body` with a started server and downloader; shuts both down even when `body` throws.
    static func run(_ kind: DownloaderKind, _ body: (DownloadHarness) async throws -> Void) async throws {
        let server = try await ImageOriginServer.start(port: 0)
        let harness = DownloadHarness(kind: kind, server: server, downloader: kind.makeDownloader())
        var failure: (any Error)?
        do { try await body(harness) } catch { failure = error }
        try await (harness.downloader as? HTTPClientDownloader)?.shutdown()
        try await server.shutdown()
        if let failure { throw failure }
    }

    /// Starts `request` with a recording delegate and waits for its completion.
    func download(_ request: DownloadRequest, cancelAfterBytes: Int? = nil, firstChunkPause: Duration? = nil,
                  timeout: Duration = .seconds(20)) async throws -> RecordingDelegate.Record {
        let delegate = RecordingDelegate(cancelAfterBytes: cancelAfterBytes, firstChunkPause: firstChunkPause)
        _ = downloader.startDownload(request, delegate: delegate)
        return try await delegate.waitForCompletion(timeout: timeout)
    }

    /// A plain request for `path` on the server.
    func request(_ path: String, limits: DownloadLimits = DownloadLimits()) -> DownloadRequest {
        DownloadRequest(url: server.url(for: path), limits: limits)
    }
}

/// Records every event of one download and checks the delegate contract as it goes: one callback at a time,
/// the head before chunks, nothing after the completion.
final class RecordingDelegate: ImageDownloadDelegate {
    struct Record: Sendable {
        var response: DownloadResponse?
        var responseCount = 0
        var body = Data()
        var chunkCount = 0
        var completions: [DownloadError?] = []
        /// Contract violations seen (overlapping callbacks, chunks before the head, events after the completion).
        var violations: [String] = []
        var completedAt: ContinuousClock.Instant?

        /// The one completion's error (`nil` for success); records an issue when there was not exactly one.
        var error: DownloadError? {
            #expect(completions.count == 1, "expected exactly one completion, got \(completions.count)")
            return completions.first ?? nil
        }
    }

    private struct State {
        var record = Record()
        var inCallback = false
    }

    private let state = Locked(State())
    private let cancelAfterBytes: Int?
    private let firstChunkPause: Duration?

    /// A delegate that cancels the download from inside the chunk callback once `cancelAfterBytes` arrived, and
    /// blocks in its first chunk callback for `firstChunkPause` (a slow consumer).
    init(cancelAfterBytes: Int? = nil, firstChunkPause: Duration? = nil) {
        self.cancelAfterBytes = cancelAfterBytes
        self.firstChunkPause = firstChunkPause
    }

    var record: Record { state.withLock { $0.record } }

    func download(_ task: any ImageDownloadTask, didReceive response: DownloadResponse) {
        enter("response") { record in
            record.response = response
            record.responseCount += 1
            if record.responseCount > 1 { record.violations.append("second response head") }
        }
        leave()
    }

    func download(_ task: any ImageDownloadTask, didReceive chunk: Data) {
        let total = enter("chunk") { record -> Int in
            if record.response == nil { record.violations.append("chunk before the response head") }
            if chunk.isEmpty { record.violations.append("empty chunk") }
            record.body.append(chunk)
            record.chunkCount += 1
            return record.body.count
        }
        if let cancelAfterBytes, total >= cancelAfterBytes {
            task.cancel()
        }
        if let firstChunkPause, total == chunk.count {
            Thread.sleep(forTimeInterval: Double(firstChunkPause.components.seconds)
                         + Double(firstChunkPause.components.attoseconds) / 1e18)
        }
        leave()
    }

    func download(_ task: any ImageDownloadTask, didCompleteWith error: DownloadError?) {
        enter("completion") { record in
            record.completions.append(error)
            record.completedAt = ContinuousClock.now
        }
        leave()
    }

    private func enter<T>(_ event: String, _ update: (inout Record) -> T) -> T {
        state.withLock { state in
            if state.inCallback { state.record.violations.append("\(event) while another callback ran") }
            if !state.record.completions.isEmpty { state.record.violations.append("\(event) after the completion") }
            state.inCallback = true
            return update(&state.record)
        }
    }

    private func leave() {
        state.withLock { $0.inCallback = false }
    }

    /// Waits for the completion (polling; the delegate is called on the download's queue), then a little
    /// longer so that an event sent after it would be seen. Fails the test when `timeout` passes first.
    func waitForCompletion(timeout: Duration, settle: Duration = .milliseconds(100)) async throws -> Record {
        let deadline = ContinuousClock.now + timeout
        while record.completions.isEmpty {
            guard ContinuousClock.now < deadline else {
                Issue.record("no completion within \(timeout)")
                return record
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        try await Task.sleep(for: settle)
        return record
    }
}

// MARK: - Fixtures

enum Fixtures {
    /// A real JPEG (scikit-image's rocket, bundled with the sample CLI).
    static let rocketJPEG: Data = image("skimage-rocket.jpg")
    /// A larger real JPEG (527 KB), for downloads that must last a while when shaped.
    static let hubbleJPEG: Data = image("skimage-hubble_deep_field.jpg")

    static func image(_ name: String) -> Data {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let url = root.appendingPathComponent("SampleCLI/Images/\(name)")
        guard let data = try? Data(contentsOf: url) else {
            fatalError("missing fixture \(url.path)")
        }
        return data
    }

    /// `rocketJPEG` with `index + 1` bytes appended after its end marker: still a decodable JPEG, but every
    /// index has different bytes.
    static func distinctJPEG(_ index: Int) -> Data {
        rocketJPEG + Data(repeating: UInt8(truncatingIfNeeded: index), count: index + 1)
    }
}

// MARK: - Raw sockets for what the origin server cannot do

/// A listening socket that never accepts, with its accept queue filled: further connects get no answer
/// (Linux drops their SYNs), so a connect to it never completes.
final class UnacceptedListener: Sendable {
    let port: Int
    private let listener: Int32
    private let fillers: [Int32]

    init() throws {
        listener = try Socket.listen(backlog: 0)
        port = try Socket.port(of: listener)
        var fillers: [Int32] = []
        for _ in 0..<4 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var address = Socket.loopback(port: port)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            fillers.append(fd)
        }
        self.fillers = fillers
        // Let the handshakes that can complete do so before the test's own connect.
        usleep(100_000)
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)/never.jpg")! }

    deinit {
        for fd in fillers { close(fd) }
        close(listener)
    }
}

/// An HTTP/1.1 responder for the one response the origin server never sends: a body without
/// `Content-Length`, delimited by closing the connection. Serves each connection on its own thread.
final class UndeclaredLengthResponder: Sendable {
    let port: Int
    private let listener: Int32
    private let body: Data

    init(body: Data) throws {
        self.body = body
        listener = try Socket.listen(backlog: 16)
        port = try Socket.port(of: listener)
        let listener = listener
        let thread = Thread {
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                Thread.detachNewThread { Self.serve(client, body: body) }
            }
        }
        thread.start()
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)/undeclared.jpg")! }

    private static func serve(_ client: Int32, body: Data) {
        defer { close(client) }
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !request.suffix(4).elementsEqual("\r\n\r\n".utf8) {
            let count = recv(client, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            request += buffer[0..<count]
        }
        let head = "HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nConnection: close\r\n\r\n"
        var out = Data(head.utf8) + body
        while !out.isEmpty {
            let sent = out.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return }
            out.removeFirst(sent)
        }
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}

private enum Socket {
    struct Failure: Error { var description: String }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    static func listen(backlog: Int32) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, backlog) == 0 else {
            close(fd)
            throw Failure(description: "bind/listen: errno \(errno)")
        }
        return fd
    }

    static func port(of fd: Int32) throws -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else { throw Failure(description: "getsockname: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
