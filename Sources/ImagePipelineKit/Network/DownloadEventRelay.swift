import Foundation
import PipelineLocking

/// The downloader's delegate for one attempt of a shared download: moves its events onto the coordinator's
/// queue, in order. Asynchronously: a downloader's thread may be a NIO event loop that the coordinator's queue
/// itself waits on while it starts the next download, so blocking it here could deadlock both. The bytes
/// queued meanwhile are bounded by ``DownloadLimits/maxResponseBytes``.
///
/// Events wait in a backlog drained by one block on the queue: the chunks a transport reads in a burst arrive
/// as one, which spares the coordinator's queue and each fetch's queue a wake-up per chunk.
final class DownloadEventRelay: ImageDownloadDelegate, @unchecked Sendable {
    // @unchecked: immutable after init but for the locked backlog; `download` is used only on the coordinator's
    // queue.
    private enum Event {
        case response(DownloadResponse)
        case chunk(Data)
        case completion(DownloadError?)
    }

    private let download: SharedDownload
    private let attempt: Int
    private let request: DownloadRequest
    private let queue: DispatchQueue
    /// Events not yet handed to `download`, oldest first; a drain is queued whenever it is not empty.
    private let backlog = Locked<[Event]>([])

    init(download: SharedDownload, attempt: Int, request: DownloadRequest, queue: DispatchQueue) {
        self.download = download
        self.attempt = attempt
        self.request = request
        self.queue = queue
    }

    func download(_ task: any ImageDownloadTask, didReceive response: DownloadResponse) {
        relay(.response(response))
    }

    func download(_ task: any ImageDownloadTask, didReceive chunk: Data) {
        relay(.chunk(chunk))
    }

    func download(_ task: any ImageDownloadTask, didCompleteWith error: DownloadError?) {
        relay(.completion(error))
    }

    private func relay(_ event: Event) {
        let startsDrain = backlog.withLock { events -> Bool in
            events.append(event)
            return events.count == 1
        }
        if startsDrain { queue.async { [self] in _queue_drain() } }
    }

    /// Hands every waiting event to the download; consecutive chunks go as one.
    private func _queue_drain() {
        let events = backlog.withLock { events -> [Event] in
            defer { events = [] }
            return events
        }
        var chunks: [Data] = []
        let flushChunks = { [download, attempt] in
            guard !chunks.isEmpty else { return }
            download._queue_didReceive(chunks.count == 1 ? chunks[0] : Self.joined(chunks), attempt: attempt)
            chunks = []
        }
        for event in events {
            switch event {
            case .chunk(let chunk):
                chunks.append(chunk)
            case .response(let response):
                flushChunks()
                download._queue_didReceive(response, attempt: attempt, request: request)
            case .completion(let error):
                flushChunks()
                download._queue_didComplete(error, attempt: attempt)
            }
        }
        flushChunks()
    }

    private static func joined(_ chunks: [Data]) -> Data {
        var joined = Data()
        joined.reserveCapacity(chunks.reduce(0) { $0 + $1.count })
        for chunk in chunks { joined.append(chunk) }
        return joined
    }
}
