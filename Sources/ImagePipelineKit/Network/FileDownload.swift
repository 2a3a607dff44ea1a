import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
import PipelineLocking
#endif

/// Streams a local file through a ``DownloadDelivery`` as if a server had sent it: `200` with
/// `Content-Length`, `Last-Modified` and `Accept-Ranges: none`, then the bytes in 64 KiB chunks, each read only
/// after the delegate returned from the previous one. Both downloaders use it for `file` URLs
/// (``DownloadLimits/allowsFileURLs``); request headers such as `Range` are ignored, as a server that ignores
/// them would.
///
/// A missing file is a `404` with an empty body (as TIP's download stubs answer an empty resource); a
/// directory, a FIFO or a device is refused with ``DownloadError/transport(description:)`` before anything is
/// read, so a file URL can neither block the download's queue nor stream forever.
package final class FileDownload: Sendable {
    private static let chunkSize = 64 * 1024

    private let url: URL
    private let path: String
    private let delivery: DownloadDelivery
    /// The open descriptor, or -1 once closed. Reads happen on the delivery's queue; the lock makes closing
    /// from `stop` (any thread) safe against them.
    private let descriptor = Locked<Int32>(-1)

    /// A download of the file at `path` (from `url`), reporting to `delivery`.
    package init(url: URL, path: String, delivery: DownloadDelivery) {
        self.url = url
        self.path = path
        self.delivery = delivery
    }

    /// Opens the file and streams it; runs on the delivery's queue.
    package func start() {
        delivery.attachTransport(stop: { [self] in close() })
        delivery.queue.async { self._queue_open() }
    }

    // Runs on the delivery's queue.
    private func _queue_open() {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR {
                let response = DownloadResponse(statusCode: 404, headers: ["Content-Length": "0"], url: url,
                                                expectedContentLength: 0)
                delivery.receive(response) { _ in }
                delivery.finish(nil)
            } else {
                delivery.finish(.transport(description: "cannot open \(path): \(String(cString: strerror(code)))"))
            }
            return
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            Glibc.close(fd)
            delivery.finish(.transport(description: "\(path) is not a regular file"))
            return
        }
        let stillRunning = descriptor.withLock { value -> Bool in
            guard !delivery.isStopped else { return false }
            value = fd
            return true
        }
        guard stillRunning else {
            Glibc.close(fd)
            return
        }
        let length = Int(info.st_size)
        let modified = Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec))
        var headers = DownloadHeaders()
        headers.add(name: "Content-Length", value: String(length))
        headers.add(name: "Last-Modified", value: HTTPDate.format(modified))
        headers.add(name: "Accept-Ranges", value: "none")
        let response = DownloadResponse(statusCode: 200, headers: headers, url: url, expectedContentLength: length)
        delivery.receive(response) { [self] running in
            if running { _queue_readNext() } else { close() }
        }
    }

    // Runs on the delivery's queue: one chunk, then the next only after the delegate returned.
    private func _queue_readNext() {
        enum Step { case chunk(Data), end, failure(String), stopped }
        let step = descriptor.withLock { fd -> Step in
            guard fd >= 0 else { return .stopped }
            var buffer = Data(count: Self.chunkSize)
            let count = buffer.withUnsafeMutableBytes { (bytes: UnsafeMutableRawBufferPointer) in
                read(fd, bytes.baseAddress, bytes.count)
            }
            if count < 0 { return .failure(String(cString: strerror(errno))) }
            if count == 0 { return .end }
            buffer.count = count
            return .chunk(buffer)
        }
        switch step {
        case .stopped:
            return
        case .end:
            close()
            delivery.finish(nil)
        case .failure(let reason):
            close()
            delivery.finish(.transport(description: "reading \(path): \(reason)"))
        case .chunk(let data):
            delivery.receive(data) { [self] running in
                if running { _queue_readNext() } else { close() }
            }
        }
    }

    private func close() {
        descriptor.withLock { fd in
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }
    }
}
