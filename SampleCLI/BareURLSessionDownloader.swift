import Foundation
import ImagePipelineKit
import PipelineLocking
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `bench fetch`'s second anchor, for `URLSessionDownloader`: URLSession used as plainly as it can be — one
/// data task with a completion handler per download, the same session settings as `URLSessionDownloader`
/// (no cache, no cookies, the same connections per host), and none of the library's code. Its rate is what
/// URLSession itself reaches on this machine, so the table can tell URLSession's cost from the downloader's.
///
/// Only what the bench needs: the whole body arrives as one chunk at the end, priorities do nothing, and a
/// cancel is passed to URLSession.
final class BareURLSessionDownloader: ImageDownloader {
    private let session: URLSession

    init(maximumConnectionsPerHost: Int = 6) {
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpMaximumConnectionsPerHost = maximumConnectionsPerHost
        session = URLSession(configuration: configuration)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    func startDownload(_ request: DownloadRequest, delegate: any ImageDownloadDelegate) -> any ImageDownloadTask {
        let task = BareURLSessionTask(request: request)
        let dataTask = session.dataTask(with: request.url) { data, response, error in
            if let error {
                delegate.download(task, didCompleteWith: .transport(description: "\(error)"))
                return
            }
            if let http = response as? HTTPURLResponse {
                delegate.download(task, didReceive: DownloadResponse(
                    statusCode: http.statusCode, headers: DownloadHeaders(), url: request.url,
                    expectedContentLength: http.expectedContentLength >= 0 ? Int(http.expectedContentLength) : nil))
            }
            if let data, !data.isEmpty { delegate.download(task, didReceive: data) }
            delegate.download(task, didCompleteWith: nil)
        }
        task.dataTask = dataTask
        dataTask.resume()
        return task
    }
}

/// The bare anchor's running download.
private final class BareURLSessionTask: ImageDownloadTask {
    let request: DownloadRequest
    private let state = Locked<(priority: Operation.QueuePriority, dataTask: URLSessionDataTask?)>((.normal, nil))

    init(request: DownloadRequest) {
        self.request = request
    }

    var dataTask: URLSessionDataTask? {
        get { state.withLock { $0.dataTask } }
        set { state.withLock { $0.dataTask = newValue } }
    }

    var priority: Operation.QueuePriority {
        get { state.withLock { $0.priority } }
        set { state.withLock { $0.priority = newValue } }
    }

    func cancel() {
        dataTask?.cancel()
    }
}
