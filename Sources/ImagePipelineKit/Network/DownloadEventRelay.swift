import Foundation

/// The downloader's delegate for one attempt of a shared download: moves its events onto the coordinator's
/// queue, in order. Asynchronously: a downloader's thread may be a NIO event loop that the coordinator's queue
/// itself waits on while it starts the next download, so blocking it here could deadlock both. The bytes
/// queued meanwhile are bounded by ``DownloadLimits/maxResponseBytes``.
///
/// The events of a burst reach the queue in one block (``QueueBacklog``).
final class DownloadEventRelay: ImageDownloadDelegate, Sendable {
    private enum Event: Sendable {
        case response(DownloadResponse)
        case chunk(Data)
        case completion(DownloadError?)
    }

    private let backlog: QueueBacklog<Event>

    init(download: SharedDownload, attempt: Int, request: DownloadRequest, queue: DispatchQueue) {
        backlog = QueueBacklog(queue: queue) { events in
            for event in events {
                switch event {
                case .response(let response): download._queue_didReceive(response, attempt: attempt, request: request)
                case .chunk(let chunk): download._queue_didReceive(chunk, attempt: attempt)
                case .completion(let error): download._queue_didComplete(error, attempt: attempt)
                }
            }
        }
    }

    func download(_ task: any ImageDownloadTask, didReceive response: DownloadResponse) {
        backlog.add(.response(response))
    }

    func download(_ task: any ImageDownloadTask, didReceive chunk: Data) {
        backlog.add(.chunk(chunk))
    }

    func download(_ task: any ImageDownloadTask, didCompleteWith error: DownloadError?) {
        backlog.add(.completion(error))
    }
}
