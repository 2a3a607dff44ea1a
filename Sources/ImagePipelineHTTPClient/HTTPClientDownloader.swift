import AsyncHTTPClient
import Foundation
import ImagePipelineKit
import NIOCore
import NIOHTTP1
import PipelineLocking
import Synchronization
import Tracing

/// An ``ImageDownloader`` on AsyncHTTPClient: pooled connections, HTTP/2 over TLS, and real back-pressure
/// (the next body part is read only after the delegate returned from the previous one). The fast choice on
/// Linux, where it completes several times as many requests a second as URLSession (FoundationNetworking).
///
/// Back-pressure works with a window: up to 128 KiB may wait for the delegate before the client stops
/// reading, so that the parts AsyncHTTPClient has already read are never lost when the connection then breaks
/// (it drops parts it has not handed over). A delegate slower than the network by more than the window can
/// still lose the last parts read before a broken connection's error.
///
/// Redirects are followed by this downloader, one request per hop, through ``DownloadRedirectPolicy``: the
/// client it owns is configured not to follow any itself. Connect and idle timeouts come from each request's
/// ``DownloadLimits``; the connect timeout covers waiting for a pooled connection too.
///
/// AsyncHTTPClient has no per-request priority, so ``ImageDownloadTask/priority`` is recorded and otherwise
/// ignored here.
///
/// Downloads start on a few of the client's event loops, a quarter of them by default (see
/// ``eventLoopCount``): a download's network work is a small share of a fetch's CPU, and fewer loops wake fewer
/// threads on cores that are busy decoding. A download started from one of the client's loops starts on it. A
/// program that downloads many images at once without decoding them (a proxy, a mirror) gets more bytes a second
/// from every loop: pass the group's loop count as `eventLoopCount`.
public final class HTTPClientDownloader: ImageDownloader {
    /// The client requests go through.
    public let client: HTTPClient
    /// Sent as `User-Agent` unless a request sets its own; `nil` sends none.
    public let userAgent: String?
    private let ownsClient: Bool
    private let isShutDown = Locked(false)
    private let loops: DownloadEventLoops

    /// How many of the client's event loops downloads start on, the first ones of its group.
    public var eventLoopCount: Int { loops.count }

    /// A downloader that owns a new client made from `configuration` (``defaultConfiguration()`` unless given).
    /// Its `redirectConfiguration` is replaced by `.disallow`: this downloader follows redirects itself.
    /// Call ``shutdown()`` when done; releasing the downloader without it shuts the client down in the
    /// background.
    /// - Parameters:
    ///   - configuration: the owned client's configuration.
    ///   - userAgent: sent as `User-Agent` unless a request sets its own; `nil` sends none.
    ///   - eventLoopCount: how many of the client's event loops downloads start on; `nil`: a quarter of them,
    ///     at least one.
    public init(configuration: HTTPClient.Configuration = HTTPClientDownloader.defaultConfiguration(),
                userAgent: String? = DownloadHeaders.defaultUserAgent, eventLoopCount: Int? = nil) {
        var configuration = configuration
        configuration.redirectConfiguration = .disallow
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        self.userAgent = userAgent
        ownsClient = true
        loops = DownloadEventLoops(group: client.eventLoopGroup, count: eventLoopCount)
    }

    /// A downloader on a client someone else owns (and shuts down). Configure it with
    /// `redirectConfiguration = .disallow`. A client that follows redirects itself still has every hop checked
    /// against ``DownloadRedirectPolicy`` (a refused hop fails the download before the client requests it),
    /// but then decides on its own which header fields to forward.
    /// - Parameters:
    ///   - client: the client requests go through.
    ///   - userAgent: sent as `User-Agent` unless a request sets its own; `nil` sends none.
    ///   - eventLoopCount: how many of the client's event loops downloads start on; `nil`: a quarter of them,
    ///     at least one.
    public init(client: HTTPClient, userAgent: String? = DownloadHeaders.defaultUserAgent, eventLoopCount: Int? = nil) {
        self.client = client
        self.userAgent = userAgent
        ownsClient = false
        loops = DownloadEventLoops(group: client.eventLoopGroup, count: eventLoopCount)
    }

    /// The configuration an owned client gets by default: automatic HTTP version (HTTP/2 when TLS offers it),
    /// no redirects, no decompression, 8 HTTP/1.1 connections per host, no read timeout (each request's
    /// ``DownloadLimits/idleTimeout`` applies), a 30 s connect timeout, no retry of a failed connect (a
    /// refused connection fails with ``DownloadError/connectionRefused`` at once), and spans for the tracer of
    /// `InstrumentationSystem` only when one was bootstrapped before this call.
    ///
    /// Eight connections per host bound the downloads from one host that run at once: a pipeline whose
    /// `GlobalConfiguration.maxConcurrentImagePipelineDownloadCount` is higher should raise
    /// `connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit` to match.
    ///
    /// The client's connect timeout matters beside each request's ``DownloadLimits/connectTimeout``: a request
    /// that gives up on its connect leaves the pool's connection attempt running until the client's timeout,
    /// and ``shutdown()`` waits for such attempts. A request's connect timeout longer than the client's is cut
    /// to the client's.
    public static func defaultConfiguration() -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(30), read: nil),
            decompression: .disabled)
        configuration.httpVersion = .automatic
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 8)
        // A failed connect fails the requests waiting for it at once. Retrying with back-off until the connect
        // timeout would turn a refused connection (nothing listens: no retry will help) into a ten-second
        // "connect timed out"; an image fetch that fails can simply be fetched again.
        configuration.connectionPool.retryConnectionEstablishment = false
        // With no tracer bootstrapped, AsyncHTTPClient would still name and fill a span for every request, to
        // hand it to the tracer that drops it: tens of microseconds a fetch. Such a client traces nothing
        // either way; one made after a tracer was bootstrapped traces through it.
        if InstrumentationSystem.tracer is NoOpTracer { configuration.tracing.tracer = nil }
        return configuration
    }

    deinit {
        if ownsClient && !isShutDown.withLock({ $0 }) {
            client.shutdown { _ in }
        }
    }

    /// Shuts down the owned client: running downloads fail with a transport error. Does nothing for an
    /// injected client. Safe to call more than once.
    public func shutdown() async throws {
        guard ownsClient else { return }
        let first = isShutDown.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first else { return }
        try await client.shutdown()
    }

    /// Starts `request`; see ``ImageDownloader/startDownload(_:delegate:)``.
    public func startDownload(_ request: DownloadRequest, delegate: any ImageDownloadDelegate) -> any ImageDownloadTask {
        let task = HTTPClientImageDownloadTask(request: request, delegate: delegate, client: client, loops: loops,
                                               userAgent: userAgent)
        task.start()
        return task
    }
}
