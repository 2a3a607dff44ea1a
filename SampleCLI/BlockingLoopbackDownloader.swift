import Foundation
import ImagePipelineKit
import PipelineLocking

/// `bench pipeline --transport blocking`: the pipeline with the hand-written fetch's HTTP in place of its HTTP
/// client, to tell what AsyncHTTPClient costs a fetch from what the pipeline's own steps cost.
///
/// Each download runs on a thread of its own (a serial queue's), takes a kept-alive blocking connection to the
/// URL's loopback port from a pool (or opens one), and hands the response head and then each socket read to the
/// pipeline on that thread. Only what the bench needs: loopback `http` URLs whose responses have a
/// `Content-Length`, no redirects, no timeouts, priorities do nothing, and a cancel takes effect at the next
/// read.
final class BlockingLoopbackDownloader: ImageDownloader {
    private let idleConnections = Locked<[LoopbackHTTPConnection]>([])

    func startDownload(_ request: DownloadRequest, delegate: any ImageDownloadDelegate) -> any ImageDownloadTask {
        let task = BlockingLoopbackTask(request: request)
        // A queue of its own gets a thread of its own: a blocking read must not hold one of the threads of
        // libdispatch's per-core pool.
        DispatchQueue(label: "sample-cli.blocking-download").async { [self] in
            run(task, delegate: delegate)
        }
        return task
    }

    private func run(_ task: BlockingLoopbackTask, delegate: any ImageDownloadDelegate) {
        let url = task.request.url
        guard let port = url.port else {
            delegate.download(task, didCompleteWith: .transport(description: "\(url): no port"))
            return
        }
        do {
            let idle = idleConnections.withLock { idle in
                idle.lastIndex { $0.port == port }.map { idle.remove(at: $0) }
            }
            let connection = try idle ?? LoopbackHTTPConnection(port: port)
            let path = url.query.map { "\(url.path)?\($0)" } ?? url.path
            let complete = try connection.stream(path, head: { head in
                delegate.download(task, didReceive: DownloadResponse(
                    statusCode: head.statusCode, headers: DownloadHeaders(head.fields), url: url,
                    expectedContentLength: head.contentLength))
            }, chunk: { part in
                guard !task.isCancelled else { return false }
                delegate.download(task, didReceive: part)
                return true
            })
            if complete { idleConnections.withLock { $0.append(connection) } }
            delegate.download(task, didCompleteWith: complete ? nil : .cancelled)
        } catch {
            delegate.download(task, didCompleteWith: .transport(description: "\(error)"))
        }
    }
}

/// A running download of ``BlockingLoopbackDownloader``.
private final class BlockingLoopbackTask: ImageDownloadTask {
    let request: DownloadRequest
    private let state = Locked<(priority: Operation.QueuePriority, isCancelled: Bool)>((.normal, false))

    init(request: DownloadRequest) {
        self.request = request
    }

    var isCancelled: Bool { state.withLock { $0.isCancelled } }

    var priority: Operation.QueuePriority {
        get { state.withLock { $0.priority } }
        set { state.withLock { $0.priority = newValue } }
    }

    func cancel() {
        state.withLock { $0.isCancelled = true }
    }
}
