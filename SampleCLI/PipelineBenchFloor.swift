#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ImagePipelineKit

/// The least a cold fetch that keeps a disk copy can cost here, for `bench pipeline` to set the pipeline
/// against: on each of `threads` threads, one blocking keep-alive HTTP/1.1 connection to the same loopback
/// origin; per image, a `GET`, the body read into a buffer sized from `Content-Length`, the bytes written to a
/// new file under their final name, and the same decode at 256 px as the bare-decode anchor.
///
/// Nothing a cache needs beyond that: no index, no checksum, no rename, no memory or rendered cache, no
/// sharing of downloads or decodes, no progress, no timeouts. What the pipeline spends above this is its own;
/// what this spends above the bare decodes, any fetch with a disk copy pays on this machine.
enum HandWrittenFetch {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Images/s of fetching every one of `paths` once from `port` on loopback, writing each into `directory`.
    static func rate(port: Int, paths: [String], directory: URL, target: TargetSizing, threads: Int) throws -> Double {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return try Timing.itemsPerSecond(count: paths.count, threads: threads) {
            // One connection per thread, closed when the thread's worker goes.
            let connection = try LoopbackHTTPConnection(port: port)
            return { index in
                let body = try connection.get(paths[index])
                try writeNewFile(body, at: directory.appendingPathComponent("\(index)").path)
                _ = try CodecCatalogue.shared.decode(body, target: target)
            }
        }
    }

    /// Creates `path` and writes `bytes` into it (no flush, as the pipeline's disk cache does not flush).
    private static func writeNewFile(_ bytes: Data, at path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Failure(description: "open \(path): errno \(errno)") }
        defer { _ = Glibc.close(descriptor) }
        try bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                guard written > 0 else { throw Failure(description: "write \(path): errno \(errno)") }
                offset += written
            }
        }
    }
}

/// A run of ``HandWrittenFetch`` with the process's CPU times and context switches around it; `bench pipeline`
/// takes one before and one after the pipeline.
struct HandWrittenRun {
    var rate: Double
    var before: ProcessCPUSnapshot
    var after: ProcessCPUSnapshot

    /// Fetches every one of `paths` from `port` with ``HandWrittenFetch``, writing into `directory`.
    static func measure(port: Int, paths: [String], directory: URL, target: TargetSizing, threads: Int) throws -> HandWrittenRun {
        let before = ProcessCPUSnapshot.now()
        let rate = try HandWrittenFetch.rate(port: port, paths: paths, directory: directory, target: target, threads: threads)
        return HandWrittenRun(rate: rate, before: before, after: ProcessCPUSnapshot.now())
    }

    /// Runs of the same images taken as one: the rate over their time together, the rest per image of them all.
    struct Together {
        var runs: [HandWrittenRun]

        /// Images over the runs' time together (each fetched the same number).
        var rate: Double { Double(runs.count) / runs.reduce(0) { $0 + 1 / $1.rate } }

        /// The process's CPU microseconds per image, the loopback origin's included.
        func processCPUPerImage(images: Int) -> Double {
            mean { ($0.after.process - $0.before.process) / Double(images) * 1e6 }
        }

        /// The loopback origin's CPU microseconds per image.
        func originCPUPerImage(images: Int) -> Double {
            mean { ($0.after.originLoops - $0.before.originLoops) / Double(images) * 1e6 }
        }

        /// Wake-ups and preemptions per image.
        func switchesPerImage(images: Int) -> (voluntary: Double, involuntary: Double) {
            let each = { (run: HandWrittenRun) in run.after.switchesPerImage(since: run.before, images: images) }
            return (mean { each($0).voluntary }, mean { each($0).involuntary })
        }

        /// The cores' shares over the runs' time together, where `/proc` tells.
        var coreShares: CoreTimes.Shares? {
            var total = CoreTimes()
            for run in runs {
                guard let start = run.before.cores, let end = run.after.cores else { return nil }
                total.busy += end.busy - start.busy
                total.idle += end.idle - start.idle
                total.steal += end.steal - start.steal
            }
            return total.shares(since: CoreTimes())
        }

        private func mean(_ value: (HandWrittenRun) -> Double) -> Double {
            runs.reduce(0) { $0 + value($1) } / Double(runs.count)
        }
    }
}

/// One blocking HTTP/1.1 connection to 127.0.0.1, kept alive across requests and closed when it goes: just
/// enough HTTP for bodies with a `Content-Length`. One request at a time: a pool hands it to one user at once.
final class LoopbackHTTPConnection: Sendable {
    private let descriptor: Int32
    /// The loopback port it is connected to.
    let port: Int

    init(port: Int) throws {
        self.port = port
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw HandWrittenFetch.Failure(description: "socket: errno \(errno)") }
        var noDelay: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            _ = Glibc.close(descriptor)
            throw HandWrittenFetch.Failure(description: "connect to port \(port): errno \(code)")
        }
    }

    deinit { _ = Glibc.close(descriptor) }

    /// The body of `GET path`, which must answer `200` with a `Content-Length`.
    func get(_ path: String) throws -> Data {
        let head = try requestHead(path)
        guard head.statusCode == 200 else {
            throw HandWrittenFetch.Failure(description: "GET \(path): status \(head.statusCode)")
        }
        let length = head.contentLength
        // Straight into the body's own storage. Requests go one at a time, so what came after the head is
        // the start of this body.
        let storage = UnsafeMutableRawPointer.allocate(byteCount: max(length, 1), alignment: 16)
        storage.copyMemory(from: Array(head.early), byteCount: head.early.count)
        var filled = head.early.count
        while filled < length {
            do {
                filled += try receive(into: storage + filled, atMost: length - filled)
            } catch {
                storage.deallocate()
                throw error
            }
        }
        return Data(bytesNoCopy: storage, count: length, deallocator: .custom { pointer, _ in pointer.deallocate() })
    }

    /// `GET path`, its body passed to `chunk` a socket read at a time (at most `chunkSize` bytes each, in
    /// storage of its own) until `Content-Length` bytes came or `chunk` returns `false`. Returns whether the
    /// whole body came: after a stop the connection is mid-body and cannot be used again.
    func stream(_ path: String, chunkSize: Int = 64 << 10, head: (ResponseHead) throws -> Void,
                chunk: (Data) throws -> Bool) throws -> Bool {
        let response = try requestHead(path)
        try head(response)
        var remaining = response.contentLength
        if !response.early.isEmpty {
            remaining -= response.early.count
            guard try chunk(Data(response.early)) else { return false }
        }
        while remaining > 0 {
            let capacity = min(remaining, chunkSize)
            let storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
            let received: Int
            do {
                received = try receive(into: storage, atMost: capacity)
            } catch {
                storage.deallocate()
                throw error
            }
            remaining -= received
            let part = Data(bytesNoCopy: storage, count: received,
                            deallocator: .custom { pointer, _ in pointer.deallocate() })
            guard try chunk(part) else { return false }
        }
        return true
    }

    /// A response's status, header fields and body length, and the body bytes read with the head.
    struct ResponseHead {
        var statusCode: Int
        var fields: [(name: String, value: String)]
        var contentLength: Int
        var early: ArraySlice<UInt8>
    }

    /// Sends `GET path` and reads the response head, which must have a `Content-Length` of at most 64 MiB.
    private func requestHead(_ path: String) throws -> ResponseHead {
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: image/jpeg\r\n\r\n".utf8)
        try request.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let sent = send(descriptor, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                guard sent > 0 else { throw HandWrittenFetch.Failure(description: "send: errno \(errno)") }
                offset += sent
            }
        }
        var head: [UInt8] = []
        var headEnd: Int?
        while headEnd == nil {
            headEnd = Self.endOfHead(in: head)
            guard headEnd != nil || head.count < 64 << 10 else {
                throw HandWrittenFetch.Failure(description: "GET \(path): no end of the response head in 64 KiB")
            }
            if headEnd == nil { head += try receive(atMost: 4096) }
        }
        let lines = String(decoding: head[..<headEnd!], as: UTF8.self).split(separator: "\r\n")
        let statusParts = lines.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, statusParts[0] == "HTTP/1.1", let statusCode = Int(statusParts[1]) else {
            throw HandWrittenFetch.Failure(description: "GET \(path): \(lines.first ?? "no status line")")
        }
        let fields = lines.dropFirst().compactMap { line -> (name: String, value: String)? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            return (String(parts[0]), parts[1].trimmingCharacters(in: .whitespaces))
        }
        guard let length = fields.first(where: { $0.name.lowercased() == "content-length" }).flatMap({ Int($0.value) }),
              length <= 64 << 20 else {
            throw HandWrittenFetch.Failure(description: "GET \(path): no usable Content-Length")
        }
        return ResponseHead(statusCode: statusCode, fields: fields, contentLength: length,
                            early: head[(headEnd! + 4)...].prefix(length))
    }

    private func receive(atMost count: Int) throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = try receive(into: UnsafeMutableRawPointer(buffer.baseAddress!), atMost: count)
        }
    }

    /// One `recv` of at most `count` bytes into `storage`: how many came. The connection's end is an error.
    private func receive(into storage: UnsafeMutableRawPointer, atMost count: Int) throws -> Int {
        let received = recv(descriptor, storage, count, 0)
        guard received > 0 else {
            throw HandWrittenFetch.Failure(description: "recv: connection ended (errno \(errno))")
        }
        return received
    }

    private static func endOfHead(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}
