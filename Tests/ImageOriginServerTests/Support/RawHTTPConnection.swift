import Foundation
#if canImport(Glibc)
import Glibc
import TestSupport
#endif

/// A blocking TCP client that speaks just enough HTTP/1.1 to see what a loopback origin really sent: the
/// exact body bytes, whether the stream ended with FIN, RST or silence, and several requests on one
/// connection. URLSession hides all three.
///
/// Not thread-safe: one test uses one connection. Blocking calls run on a Dispatch thread through
/// ``offloaded(_:)`` so they never hold one of Swift concurrency's few cooperative threads.
final class RawHTTPConnection: @unchecked Sendable {
    // @unchecked: the socket is used by one test at a time, sequentially.

    /// How a read ended.
    enum Ending: Equatable, CustomStringConvertible {
        /// The declared `Content-Length` was read (the connection may stay open).
        case complete
        /// The server closed the connection (FIN) first.
        case eof
        /// The server aborted the connection (RST).
        case reset
        /// Nothing arrived within the receive timeout.
        case timeout

        var description: String {
            switch self {
            case .complete: "complete"
            case .eof: "eof"
            case .reset: "reset"
            case .timeout: "timeout"
            }
        }
    }

    struct Response {
        var status: Int
        var headers: [(name: String, value: String)]
        var body: [UInt8]
        var ending: Ending

        func header(_ name: String) -> String? {
            headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }

        var contentLength: Int? { header("Content-Length").flatMap { Int($0) } }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let socket: Int32
    private var buffered: [UInt8] = []
    private var isClosed = false

    /// Connects to 127.0.0.1:`port`; reads give up after `receiveTimeout` of silence.
    init(port: Int, receiveTimeout: Double = 5) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(socket)
            throw Failure(description: "connect: errno \(errno)")
        }
        setReceiveTimeout(receiveTimeout)
    }

    deinit { close() }

    func setReceiveTimeout(_ seconds: Double) {
        var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sets a small receive buffer (before reading anything) so the kernel stops taking bytes early.
    func setReceiveBuffer(_ bytes: Int32) {
        var value = bytes
        setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(socket)
    }

    /// Closes with RST instead of FIN (`SO_LINGER` 0), as a client that is killed mid-download.
    func abort() {
        var value = linger(l_onoff: 1, l_linger: 0)
        setsockopt(socket, SOL_SOCKET, SO_LINGER, &value, socklen_t(MemoryLayout<linger>.size))
        close()
    }

    /// Sends raw bytes (a request, or several pipelined).
    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw Failure(description: "send: errno \(errno)") }
            offset += sent
        }
    }

    /// Sends a request for `target` with `headers` (a `Host` is added).
    func sendRequest(_ method: String = "GET", _ target: String, headers: [(String, String)] = []) throws {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        try send(text + "\r\n")
    }

    /// Sends a request and reads its response (see ``readResponse(bodyExpected:maxBodyBytes:)``).
    func request(_ method: String = "GET", _ target: String, headers: [(String, String)] = [],
                 maxBodyBytes: Int = .max) throws -> Response {
        try sendRequest(method, target, headers: headers)
        return try readResponse(bodyExpected: method != "HEAD", maxBodyBytes: maxBodyBytes)
    }

    /// Reads one response head, then its body: `Content-Length` bytes, or until the server closes, resets or
    /// goes silent. With `bodyExpected` false (a `HEAD`), reads no body whatever the head declares.
    func readResponse(bodyExpected: Bool = true, maxBodyBytes: Int = .max) throws -> Response {
        var headEnd: Int?
        while headEnd == nil {
            if let index = Self.find([13, 10, 13, 10], in: buffered) {
                headEnd = index
                break
            }
            let (chunk, ending) = receive()
            guard let chunk else {
                throw Failure(description: "connection ended (\(ending)) before a response head; got \(buffered.count) bytes")
            }
            buffered += chunk
        }
        let headText = String(decoding: buffered[..<headEnd!], as: UTF8.self)
        buffered.removeFirst(headEnd! + 4)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw Failure(description: "bad status line in \(headText)")
        }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var response = Response(status: status, headers: headers, body: [], ending: .complete)
        guard bodyExpected else { return response }
        let wanted = min(response.contentLength ?? .max, maxBodyBytes)
        while buffered.count < wanted {
            let (chunk, ending) = receive()
            guard let chunk else {
                response.ending = ending
                break
            }
            buffered += chunk
        }
        let taken = min(wanted, buffered.count)
        response.body = Array(buffered[..<taken])
        buffered.removeFirst(taken)
        return response
    }

    /// Reads whatever arrives until the connection ends or goes silent.
    func readToEnd() -> (bytes: [UInt8], ending: Ending) {
        var bytes = buffered
        buffered = []
        while true {
            let (chunk, ending) = receive()
            guard let chunk else { return (bytes, ending) }
            bytes += chunk
        }
    }

    /// Reads until `count` bytes arrived, or fewer when the connection ends or goes silent first.
    func read(count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        while bytes.count < count {
            let (chunk, ending) = readSome(limit: count - bytes.count)
            bytes += chunk
            if ending != nil { break }
        }
        return bytes
    }

    /// Reads at least one byte, up to `limit`.
    func readSome(limit: Int = 64 * 1024) -> (bytes: [UInt8], ending: Ending?) {
        if !buffered.isEmpty {
            let taken = Array(buffered.prefix(limit))
            buffered.removeFirst(taken.count)
            return (taken, nil)
        }
        let (chunk, ending) = receive(limit: limit)
        return (chunk ?? [], chunk == nil ? ending : nil)
    }

    private func receive(limit: Int = 64 * 1024) -> ([UInt8]?, Ending) {
        while true {
            var received = 0
            let chunk = [UInt8](unsafeUninitializedCapacity: limit) { buffer, initialized in
                received = recv(socket, buffer.baseAddress, limit, 0)
                initialized = max(0, received)
            }
            let count = received
            if count > 0 { return (chunk, .complete) }
            if count == 0 { return (nil, .eof) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return (nil, .timeout)
            case ECONNRESET: return (nil, .reset)
            default: return (nil, .eof)
            }
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<(start + needle.count)]) == needle { return start }
        }
        return nil
    }
}
