import Foundation

/// The downloader's delegate for one attempt of a shared download: brings its events, in order, to the queue of
/// the client that started the download (a `QueueBoundDownloadClient`'s event queue; the coordinator's own
/// queue for any other client), where the shared download takes them inside a turn of the coordinator's queue (`runOnQueue`).
/// That client then hears of them on the thread already there: its share arrives as a block of its own queue
/// appended to the one running, which the same thread runs next. The download's events cost one hand-off from
/// the downloader's thread, not one to the coordinator's queue and another to the client's. The fetches that
/// joined the download get their shares of a burst together, once the turn is over (``DownloadFanOut``).
///
/// Asynchronously: a downloader's thread may be a NIO event loop, which must not wait for the coordinator's
/// queue or decode. The bytes queued meanwhile are bounded by ``DownloadLimits/maxResponseBytes``.
///
/// The events of a burst reach the queue in one block (``QueueBacklog``).
final class DownloadEventRelay: ImageDownloadDelegate, Sendable {
    private enum Event: Sendable {
        case response(DownloadResponse)
        case chunk(Data)
        case completion(DownloadError?)
    }

    private let backlog: QueueBacklog<Event>

    init(download: SharedDownload, attempt: Int, request: DownloadRequest, queue clientQueue: DispatchQueue?) {
        let coordinator = download.coordinator
        let homeQueue = clientQueue ?? coordinator.queue
        backlog = QueueBacklog(queue: homeQueue) { events in
            coordinator.runOnQueue {
                coordinator._queue_fanningOut(of: download, from: homeQueue) {
                    for event in events {
                        switch event {
                        case .response(let response): download._queue_didReceive(response, attempt: attempt, request: request)
                        case .chunk(let chunk): download._queue_didReceive(chunk, attempt: attempt)
                        case .completion(let error): download._queue_didComplete(error, attempt: attempt)
                        }
                    }
                }
            }.run()
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
