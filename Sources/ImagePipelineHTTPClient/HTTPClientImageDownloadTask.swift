import AsyncHTTPClient
import Foundation
import ImagePipelineKit
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix
import Synchronization
import PipelineLocking

/// A running ``HTTPClientDownloader`` download: one AsyncHTTPClient request per hop of its redirect chain.
final class HTTPClientImageDownloadTask: ImageDownloadTask {
    let request: DownloadRequest
    let delivery: DownloadDelivery
    private let client: HTTPClient
    private let loops: DownloadEventLoops
    private let userAgent: String?
    private let state: Locked<State>

    private struct State {
        var priority: Operation.QueuePriority
        /// The hop whose events count; a superseded hop's late events are ignored.
        var hop = 0
        var current: HTTPClient.Task<Void>?
        var redirectsFollowed = 0
    }

    init(request: DownloadRequest, delegate: any ImageDownloadDelegate, client: HTTPClient, loops: DownloadEventLoops,
         userAgent: String?) {
        self.request = request
        self.client = client
        self.loops = loops
        self.userAgent = userAgent
        // The delegate is called on the event loop that reads the response when nothing else is delivering:
        // a hop to another thread per event was most of what a download over a fast local link cost.
        delivery = DownloadDelivery(delegate: delegate, limits: request.limits,
                                    label: "ImagePipelineHTTPClient.HTTPClientDownloader.download",
                                    deliversOnTransportThread: true)
        state = Locked(State(priority: request.priority))
        delivery.begin(task: self)
    }

    var priority: Operation.QueuePriority {
        get { state.withLock { $0.priority } }
        set { state.withLock { $0.priority = newValue } }
    }

    func cancel() {
        delivery.cancel()
    }

    func start() {
        switch DownloadSource.of(request) {
        case .failure(let error):
            // `fail`, not `finish`: a transport's finish may be delivered on the calling thread, and this is
            // still inside `startDownload`.
            delivery.fail(error)
        case .success(.file(let path)):
            FileDownload(url: request.url, path: path, delivery: delivery).start()
        case .success(.http):
            delivery.attachTransport(stop: { [weak self] in self?.stopCurrentHop() })
            // A request started on one of the client's event loops is set up there: the pool's bookkeeping, the
            // connection's idle timer and the request's write run in place. Started from any other thread, each
            // of those is a task sent to a loop, and each wakes it (about two wake-ups a download, against one
            // for this hop).
            let loop = loops.next()
            guard !loop.inEventLoop else { return startHop(url: request.url, headers: request.headers) }
            loop.execute { [self] in startHop(url: request.url, headers: request.headers) }
        }
    }

    // MARK: - Hops

    private func startHop(url: URL, headers: DownloadHeaders) {
        // Stopped before its turn on the loop came: the delivery has ended the download already.
        guard !delivery.isStopped else { return }
        let ahcRequest: HTTPClient.Request
        do {
            var fields = HTTPHeaders()
            for (name, value) in headers { fields.add(name: name, value: value) }
            if !headers.contains("User-Agent"), let userAgent { fields.add(name: "User-Agent", value: userAgent) }
            ahcRequest = try HTTPClient.Request(url: url, method: .GET, headers: fields)
        } catch {
            delivery.fail(.transport(description: "invalid request for \(url.absoluteString): \(error)"))
            return
        }
        let hop = state.withLock { state -> Int in
            state.hop += 1
            return state.hop
        }
        let hopDelegate = HopDelegate(owner: self, hop: hop, url: url, headers: headers)
        let ahcTask = client.execute(request: ahcRequest, delegate: hopDelegate, deadline: nil)
        // A fast origin may already have redirected this hop and the next one have started: keep the newest.
        state.withLock { state in
            if state.hop == hop { state.current = ahcTask }
        }
        // A stop that came while the hop was being created found nothing to cancel.
        if delivery.isStopped { ahcTask.cancel() }
    }

    private func stopCurrentHop() {
        state.withLock { $0.current }?.cancel()
    }

    fileprivate func isCurrent(_ hop: Int) -> Bool {
        state.withLock { $0.hop == hop }
    }

    /// Runs the policy on a redirect head and counts the redirect when it is followed.
    fileprivate func decideRedirect(location: String, from url: URL, headers: DownloadHeaders) -> DownloadRedirectPolicy.Decision {
        state.withLock { state in
            let decision = DownloadRedirectPolicy.evaluate(location: location, from: url, redirectsFollowed: state.redirectsFollowed,
                                                           currentHeaders: headers, limits: request.limits)
            if case .follow = decision { state.redirectsFollowed += 1 }
            return decision
        }
    }

    /// Abandons `hop` (`abandoned` is cancelled, its late events ignored) and requests `url` next.
    fileprivate func follow(from hop: Int, abandoning abandoned: HTTPClient.Task<Void>, to url: URL, headers: DownloadHeaders) {
        // `abandoned` comes from the hop's own callback: `current` may not be set yet, since a fast origin can
        // answer before `execute` has returned to `startHop`.
        guard isCurrent(hop), !delivery.isStopped else { return }
        startHop(url: url, headers: headers)
        abandoned.cancel()
    }

    /// The download's error for an error AsyncHTTPClient reported.
    static func downloadError(_ error: any Error, limits: DownloadLimits) -> DownloadError {
        if isConnectionRefused(error) { return .connectionRefused }
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout, .getConnectionFromPoolTimeout, .tlsHandshakeTimeout:
                return .connectTimedOut
            case .readTimeout:
                return .idleTimedOut
            case .cancelled:
                return .cancelled
            case .redirectLimitReached:
                return .tooManyRedirects(limits.maxRedirects)
            default:
                break
            }
        }
        return .transport(description: String(describing: error))
    }

    /// Whether the connect was answered with a refusal (`ECONNREFUSED`), for one address or for all of them.
    private static func isConnectionRefused(_ error: any Error) -> Bool {
        if let error = error as? IOError { return error.errnoCode == ECONNREFUSED }
        if let error = error as? NIOConnectionError {
            return !error.connectionErrors.isEmpty && error.connectionErrors.allSatisfy { isConnectionRefused($0.error) }
        }
        return false
    }
}

/// The AsyncHTTPClient delegate of one hop. Its calls come on the request's event loop, one at a time, but the
/// delivery's resume callbacks run on the download's queue, so what it changes sits in its own mutexes, its
/// owner's lock or the delivery.
private final class HopDelegate: HTTPClientResponseDelegate {
    typealias Response = Void

    private let owner: HTTPClientImageDownloadTask
    private let hop: Int
    private let url: URL
    private let headers: DownloadHeaders
    /// Set in `didVisitURL` when this hop's response is a redirect the policy allows.
    private let redirect = Locked<(url: URL, headers: DownloadHeaders)?>(nil)
    /// Body bytes handed to the delivery whose delegate call has not returned yet.
    private let undelivered = Locked(0)
    /// How many body bytes may wait for the delegate before the client stops reading.
    static let window = 128 * 1024
    /// The URL of the last response head (differs from `url` only when the client follows redirects itself).
    private let answeredURL: Locked<URL>

    init(owner: HTTPClientImageDownloadTask, hop: Int, url: URL, headers: DownloadHeaders) {
        self.owner = owner
        self.hop = hop
        self.url = url
        self.headers = headers
        answeredURL = Locked(url)
    }

    private var delivery: DownloadDelivery { owner.delivery }

    func didSendRequestHead(task: HTTPClient.Task<Void>, _ head: HTTPRequestHead) {
        if owner.isCurrent(hop) { delivery.didConnect() }
    }

    // Called for every response head, redirects included, also when the client follows redirects itself:
    // the one place every hop passes through.
    func didVisitURL(task: HTTPClient.Task<Void>, _ request: HTTPClient.Request, _ head: HTTPResponseHead) {
        guard owner.isCurrent(hop) else { return }
        delivery.noteActivity()
        redirect.withLock { $0 = nil }
        answeredURL.withLock { $0 = request.url }
        let responseHeaders = DownloadHeaders(head.headers.map { (name: $0.name, value: $0.value) })
        guard let location = DownloadRedirectPolicy.redirectLocation(statusCode: Int(head.status.code), headers: responseHeaders)
        else { return }
        switch owner.decideRedirect(location: location, from: request.url, headers: headers) {
        case .follow(let url, let headers):
            redirect.withLock { $0 = (url, headers) }
        case .refuse(let error):
            delivery.fail(error)
            task.fail(reason: HTTPClientError.cancelled)
        }
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        guard owner.isCurrent(hop) else { return task.eventLoop.makeSucceededVoidFuture() }
        if let next = redirect.withLock({ $0 }) {
            // The client did not follow (it is configured not to): this downloader does.
            owner.follow(from: hop, abandoning: task, to: next.url, headers: next.headers)
            return task.eventLoop.makeSucceededVoidFuture()
        }
        let responseHeaders = DownloadHeaders(head.headers.map { (name: $0.name, value: $0.value) })
        let response = DownloadResponse(statusCode: Int(head.status.code), headers: responseHeaders,
                                        url: answeredURL.withLock { $0 },
                                        expectedContentLength: responseHeaders.integerValue(for: "Content-Length"))
        // Not held back: while this future is pending, AsyncHTTPClient keeps the body parts it reads, and drops
        // them if the connection then closes (see didReceiveBodyPart).
        delivery.receive(response) { _ in }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        guard owner.isCurrent(hop), redirect.withLock({ $0 }) == nil else { return task.eventLoop.makeSucceededVoidFuture() }
        let count = buffer.readableBytes
        let queued = undelivered.withLock { bytes -> Int in
            bytes += count
            return bytes
        }
        // Back-pressure with a window: AsyncHTTPClient reads on only when the returned future completes. Holding
        // every part until the delegate returned would lose data, though: when the connection closes,
        // AsyncHTTPClient drops the parts it read but had not handed over yet, and "every byte, then the error"
        // would become "some bytes, then the error". So parts are taken at once while less than `window` bytes
        // wait for the delegate, and only beyond that does the future wait for this part's delivery.
        // A part that fills much of NIO's read buffer is handed on where NIO read it, not copied: the download
        // appends it to its body anyway, and a copy here cost as much as that append. A small part is copied,
        // since holding it would hold the whole buffer: a server dribbling a few bytes per packet must not make
        // the window's worth of parts hold many times their size.
        let fillsMuchOfItsBuffer = count >= buffer.storageCapacity / 4
        let part = buffer.getData(at: buffer.readerIndex, length: count,
                                  byteTransferStrategy: fillsMuchOfItsBuffer ? .noCopy : .copy) ?? Data()
        if queued <= Self.window {
            delivery.receive(part) { [self] _ in
                undelivered.withLock { $0 -= count }
            }
            return task.eventLoop.makeSucceededVoidFuture()
        }
        let promise = task.eventLoop.makePromise(of: Void.self)
        // A stopped download's transport is cancelled by the delivery, so succeeding then is safe too.
        delivery.receive(part) { [self] _ in
            undelivered.withLock { $0 -= count }
            promise.succeed(())
        }
        return promise.futureResult
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        guard owner.isCurrent(hop) else { return }
        delivery.finish(HTTPClientImageDownloadTask.downloadError(error, limits: owner.request.limits))
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        guard owner.isCurrent(hop), redirect.withLock({ $0 }) == nil else { return }
        delivery.finish(nil)
    }
}
