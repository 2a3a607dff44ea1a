import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
import PipelineLocking
#endif

/// An ``ImageDownloader`` on Foundation's `URLSession` (libcurl underneath on Linux): no extra dependency, but
/// HTTP/1.1 only, and slower than `HTTPClientDownloader` (`ImagePipelineHTTPClient`) at many requests a second.
///
/// One session per downloader, with data tasks streaming through a session delegate; no URL cache (on Linux
/// it keys entries without the query string, and the pipeline has its own disk cache), no cookies, at most
/// `maximumConnectionsPerHost` connections to one host. Redirects go through ``DownloadRedirectPolicy``.
///
/// Linux limits worth knowing:
/// - Back-pressure stops at this downloader: libcurl reads on while the delegate works, so chunks wait in
///   memory until delivered. ``DownloadLimits/maxResponseBytes`` ends the download, but a server that floods a
///   body in chunks of a few bytes queues one callback per chunk faster than they run, and the cancel can be
///   lost behind them: use `HTTPClientDownloader` against servers you do not trust.
/// - The connection is invisible here, so ``DownloadLimits/connectTimeout`` bounds the wait for the response
///   head.
/// - ``ImageDownloadTask/priority`` sets `URLSessionTask.priority` (0...1, see
///   `Operation.QueuePriority.relativeValue`); libcurl does not act on it.
/// - Unless the request sets `Accept-Encoding`, `identity` is sent: libcurl would otherwise ask for gzip and
///   unpack it, and `Content-Length` and `Range` would then count different bytes than the ones delivered.
public final class URLSessionDownloader: ImageDownloader {
    private let session: URLSession
    private let router: URLSessionDownloadRouter

    /// A downloader with its own session.
    /// - Parameters:
    ///   - maximumConnectionsPerHost: connections opened to one host at most (further requests wait).
    ///   - userAgent: sent as `User-Agent` unless a request sets its own; `nil` keeps libcurl's.
    public init(maximumConnectionsPerHost: Int = 6, userAgent: String? = DownloadHeaders.defaultUserAgent) {
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpMaximumConnectionsPerHost = maximumConnectionsPerHost
        if let userAgent {
            configuration.httpAdditionalHeaders = ["User-Agent": userAgent]
        }
        router = URLSessionDownloadRouter()
        // The session's callbacks only hand events to each download's own queue, so one serial queue keeps
        // them in order without slowing anyone down.
        let callbackQueue = OperationQueue()
        callbackQueue.maxConcurrentOperationCount = 1
        callbackQueue.name = "ImagePipelineKit.URLSessionDownloader.callbacks"
        session = URLSession(configuration: configuration, delegate: router, delegateQueue: callbackQueue)
    }

    deinit {
        // Running downloads hold the session and finish; the session then lets go of the router.
        session.finishTasksAndInvalidate()
    }

    /// Starts `request`; see ``ImageDownloader/startDownload(_:delegate:)``.
    public func startDownload(_ request: DownloadRequest, delegate: any ImageDownloadDelegate) -> any ImageDownloadTask {
        let task = URLSessionImageDownloadTask(request: request, delegate: delegate)
        switch DownloadSource.of(request) {
        case .failure(let error):
            task.delivery.finish(error)
        case .success(.file(let path)):
            FileDownload(url: request.url, path: path, delivery: task.delivery).start()
        case .success(.http):
            let dataTask = session.dataTask(with: Self.urlRequest(url: request.url, headers: request.headers,
                                                                   limits: request.limits))
            dataTask.priority = request.priority.relativeValue
            task.attach(dataTask)
            router.register(task, for: dataTask)
            dataTask.resume()
        }
        return task
    }

    static func urlRequest(url: URL, headers: DownloadHeaders, limits: DownloadLimits) -> URLRequest {
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = "GET"
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        urlRequest.httpShouldHandleCookies = false
        // Our own idle timer fires first; this is libcurl's backstop.
        urlRequest.timeoutInterval = max(Double(limits.idleTimeout.components.seconds), 1) + 5
        for (name, value) in headers {
            urlRequest.addValue(value, forHTTPHeaderField: name)
        }
        if !headers.contains("Accept-Encoding") {
            urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        }
        return urlRequest
    }
}

/// A running ``URLSessionDownloader`` download.
package final class URLSessionImageDownloadTask: ImageDownloadTask {
    package let request: DownloadRequest
    let delivery: DownloadDelivery
    private let state: Locked<State>

    private struct State {
        var priority: Operation.QueuePriority
        var dataTask: URLSessionDataTask?
        var redirectsFollowed = 0
        var currentURL: URL
        var currentHeaders: DownloadHeaders
    }

    init(request: DownloadRequest, delegate: any ImageDownloadDelegate) {
        self.request = request
        delivery = DownloadDelivery(delegate: delegate, limits: request.limits,
                                    label: "ImagePipelineKit.URLSessionDownloader.download")
        state = Locked(State(priority: request.priority, currentURL: request.url, currentHeaders: request.headers))
        delivery.begin(task: self)
    }

    package var priority: Operation.QueuePriority {
        get { state.withLock { $0.priority } }
        set {
            state.withLock { state in
                state.priority = newValue
                state.dataTask?.priority = newValue.relativeValue
            }
        }
    }

    /// The session task's current priority (0...1), or `nil` for a download that is not an HTTP transfer.
    package var sessionTaskPriority: Float? {
        state.withLock { $0.dataTask?.priority }
    }

    package func cancel() {
        delivery.cancel()
    }

    fileprivate func attach(_ dataTask: URLSessionDataTask) {
        state.withLock { $0.dataTask = dataTask }
        delivery.attachTransport(stop: { dataTask.cancel() })
    }

    /// The policy's decision on a redirect to `target`, counting it when followed.
    fileprivate func decideRedirect(to target: URL, from response: HTTPURLResponse) -> DownloadRedirectPolicy.Decision {
        state.withLock { state in
            let from = response.url ?? state.currentURL
            let decision = DownloadRedirectPolicy.evaluate(
                location: target.absoluteString, from: from, redirectsFollowed: state.redirectsFollowed,
                currentHeaders: state.currentHeaders, limits: request.limits)
            if case .follow(let url, let headers) = decision {
                state.redirectsFollowed += 1
                state.currentURL = url
                state.currentHeaders = headers
            }
            return decision
        }
    }
}

/// Routes the session's callbacks to the download they belong to.
final class URLSessionDownloadRouter: NSObject, URLSessionDataDelegate, Sendable {
    private let tasks = Locked<[Int: URLSessionImageDownloadTask]>([:])

    func register(_ task: URLSessionImageDownloadTask, for dataTask: URLSessionTask) {
        tasks.withLock { $0[dataTask.taskIdentifier] = task }
    }

    private func download(for task: URLSessionTask) -> URLSessionImageDownloadTask? {
        tasks.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        guard let download = download(for: dataTask), !download.delivery.isStopped else {
            completionHandler(.cancel)
            return
        }
        download.delivery.receive(Self.downloadResponse(response, fallbackURL: download.request.url)) { _ in }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        // No back-pressure possible: libcurl has read on already. Data for a download that has ended (a limit
        // hit while its cancel was on its way) cancels the task again: an endless body must not keep flowing
        // into the session's queue.
        guard let download = download(for: dataTask), !download.delivery.isStopped else { return dataTask.cancel() }
        download.delivery.receive(data) { _ in }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        guard let download = download(for: task), let target = request.url else {
            completionHandler(nil)
            return
        }
        download.delivery.noteActivity()
        switch download.decideRedirect(to: target, from: response) {
        case .follow(let url, let headers):
            completionHandler(URLSessionDownloader.urlRequest(url: url, headers: headers, limits: download.request.limits))
        case .refuse(let error):
            // Answer URLSession before cancelling: FoundationNetworking traps when a task is cancelled while it
            // waits for this handler. The redirect response it then delivers comes after this callback (the
            // callback queue is serial) and finds the download failed, so it is dropped.
            completionHandler(nil)
            download.delivery.fail(error)
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let download = tasks.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        download.delivery.finish(error.map(Self.downloadError))
    }

    static func downloadResponse(_ response: URLResponse, fallbackURL: URL) -> DownloadResponse {
        let http = response as? HTTPURLResponse
        var headers = DownloadHeaders()
        // Foundation keeps header fields in a dictionary: order is lost, so make it at least stable.
        let fields = (http?.allHeaderFields ?? [:]).compactMap { key, value -> (String, String)? in
            guard let name = key as? String else { return nil }
            return (name, value as? String ?? "\(value)")
        }
        for (name, value) in fields.sorted(by: { $0.0.lowercased() < $1.0.lowercased() }) {
            headers.add(name: name, value: value)
        }
        let length = response.expectedContentLength >= 0 ? Int(response.expectedContentLength)
                                                         : headers.integerValue(for: "Content-Length")
        return DownloadResponse(statusCode: http?.statusCode ?? 200, headers: headers, url: response.url ?? fallbackURL,
                                expectedContentLength: length)
    }

    static func downloadError(_ error: any Error) -> DownloadError {
        let error = error as NSError
        if error.domain == NSURLErrorDomain {
            switch error.code {
            case NSURLErrorCancelled: return .cancelled
            case NSURLErrorTimedOut: return .idleTimedOut
            // libcurl's "could not connect": the connection was refused (or the host could not be reached).
            case NSURLErrorCannotConnectToHost: return .connectionRefused
            default: break
            }
        }
        return .transport(description: "\(error.domain) \(error.code): \(error.localizedDescription)")
    }
}
