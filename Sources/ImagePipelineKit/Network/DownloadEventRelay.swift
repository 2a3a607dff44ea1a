import Foundation

/// The downloader's delegate for one attempt of a shared download: hands its events to the coordinator's
/// queue, in order. The downloader's thread (often a NIO event loop) runs them itself while nobody else runs
/// the queue, and otherwise leaves them to the thread that does (``SerialDrain/runIfIdle(_:)``): it never
/// waits for the queue, which may itself be waiting for that event loop. The bytes queued meanwhile are bounded
/// by ``DownloadLimits/maxResponseBytes``.
final class DownloadEventRelay: ImageDownloadDelegate, Sendable {
    private let download: SharedDownload
    private let attempt: Int
    private let request: DownloadRequest
    private let queue: SerialDrain

    init(download: SharedDownload, attempt: Int, request: DownloadRequest, queue: SerialDrain) {
        self.download = download
        self.attempt = attempt
        self.request = request
        self.queue = queue
    }

    func download(_ task: any ImageDownloadTask, didReceive response: DownloadResponse) {
        queue.runIfIdle { [download, attempt, request] in download._queue_didReceive(response, attempt: attempt, request: request) }
    }

    func download(_ task: any ImageDownloadTask, didReceive chunk: Data) {
        queue.runIfIdle { [download, attempt] in download._queue_didReceive(chunk, attempt: attempt) }
    }

    func download(_ task: any ImageDownloadTask, didCompleteWith error: DownloadError?) {
        queue.runIfIdle { [download, attempt] in download._queue_didComplete(error, attempt: attempt) }
    }
}
