import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A real HTTP/1.1 origin on 127.0.0.1 for tests, the demo and benchmarks: serves in-memory assets and/or a
/// directory, honours `Range`/`If-Range`, shapes bandwidth and latency, simulates a shared network link,
/// misbehaves on request, and logs every request for assertions.
///
/// ```swift
/// let server = try await ImageOriginServer.start(port: 0)
/// server.setAsset(jpegData, at: "/a.jpg", contentType: "image/jpeg")
/// server.setFaults([.closeAfterBytes(1000)], for: "/a.jpg", count: 1)   // the first request fails…
/// // …fetch server.url(for: "/a.jpg") twice…
/// try await server.waitForCompletedRequests(count: 2, timeout: .seconds(5))
/// #expect(server.requestLog[1].range == "bytes=1000-")
/// try await server.shutdown()
/// ```
///
/// Responses carry `Content-Length`, `Content-Type` (from the extension unless given), `Last-Modified`,
/// a strong `ETag`, `Accept-Ranges: bytes` and `Date`. A single byte range (`bytes=N-`, `bytes=N-M`,
/// `bytes=-N`) gets `206` with `Content-Range`; an unsatisfiable one `416` with `Content-Range: bytes */len`;
/// an `If-Range` (ETag or HTTP-date) that no longer matches gets `200` and the whole body. A conditional `GET`
/// whose `If-None-Match` matches the ETag (or, without it, whose `If-Modified-Since` is not older than
/// `Last-Modified`) gets `304 Not Modified` with the validators and no body (unless the route's faults include
/// ``OriginFault/ignoreValidators``). An asset may carry a `Cache-Control` value, sent with its `200`, `206`
/// and `304` responses. `GET` and `HEAD`
/// only (`405` otherwise), `404` for unknown paths, `400` for targets that try to leave the directory.
/// Connections are kept alive unless the client asks otherwise; pipelined requests are answered in order.
///
/// All methods are thread-safe and may be called while requests are in flight; a change applies from the
/// next request on. Connections run on NIO's shared event loops (or the group given to `start`); bodies are
/// written as the channel becomes writable, so a slow client never makes the server buffer a large asset.
public final class ImageOriginServer: Sendable {
    /// The port the server listens on (the ephemeral one chosen by the system when started with port 0).
    public let port: Int
    /// `http://127.0.0.1:PORT`.
    public let baseURL: URL
    /// The served directory's canonical path, when started with one.
    public let directory: String?

    private let serverChannel: any Channel
    private let routes: OriginRoutes
    private let log: OriginRequestLog
    private let connections: OriginConnections
    private let downlink: OriginDownlink
    /// Set by ``shutdown()``: then `deinit` has nothing to close (and the event loops may be gone already).
    private let isShutDown = Atomic<Bool>(false)

    /// The date `setAsset` uses for `Last-Modified` unless told otherwise: 2024-01-01 00:00:00 UTC, fixed so
    /// tests can send it back in `If-Range`.
    public static let defaultLastModified = Date(timeIntervalSince1970: 1_704_067_200)

    private init(serverChannel: any Channel, port: Int, directory: OriginDirectory?, routes: OriginRoutes,
                 log: OriginRequestLog, connections: OriginConnections, downlink: OriginDownlink) {
        self.serverChannel = serverChannel
        self.port = port
        self.directory = directory?.root
        self.routes = routes
        self.log = log
        self.connections = connections
        self.downlink = downlink
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
    }

    deinit {
        // A server dropped without shutdown() stops listening; its open connections end with the process.
        if !isShutDown.load(ordering: .acquiring) { serverChannel.close(promise: nil) }
    }

    // MARK: Starting and stopping

    /// Starts a server on 127.0.0.1 serving in-memory assets only.
    /// - Parameters:
    ///   - port: the port to listen on; 0 (the default) lets the system choose a free one.
    ///   - eventLoopGroup: the event loops that serve; `nil` (the default) uses SwiftNIO's shared singleton
    ///     group. A group of its own keeps the server's CPU time apart from a client's in the same process
    ///     (a benchmark that must not count the origin's work as the client's). The caller shuts it down,
    ///     after ``shutdown()``.
    /// - Throws: NIO's `IOError` when the port cannot be bound.
    public static func start(port: Int = 0, eventLoopGroup: (any EventLoopGroup)? = nil) async throws -> ImageOriginServer {
        try await launch(port: port, directory: nil, group: eventLoopGroup)
    }

    /// Starts a server on 127.0.0.1 serving the files under `directory` (read from disk for each request),
    /// and any in-memory assets, which take precedence over files at the same path.
    /// - Throws: ``OriginServerError/notADirectory(_:)``, or NIO's `IOError` when the port cannot be bound.
    public static func start(port: Int = 0, directory: String) async throws -> ImageOriginServer {
        try await launch(port: port, directory: try OriginDirectory(path: directory))
    }

    /// Starts a server on 127.0.0.1 serving the files under the file URL `directory`; as with a path.
    public static func start(port: Int = 0, directory: URL) async throws -> ImageOriginServer {
        try await start(port: port, directory: directory.path)
    }

    private static func launch(port: Int, directory: OriginDirectory?,
                               group: (any EventLoopGroup)? = nil) async throws -> ImageOriginServer {
        let routes = OriginRoutes()
        let log = OriginRequestLog()
        let connections = OriginConnections()
        let downlink = OriginDownlink()
        let bootstrap = ServerBootstrap(group: group ?? MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let acceptedAt = NIODeadline.now()
                    let id = connections.register(channel)
                    // Framing headers come from the response planner, which can leave a body unframed.
                    var encoder = HTTPResponseEncoder.Configuration()
                    encoder.automaticallySetFramingHeaders = false
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withPipeliningAssistance: true, withErrorHandling: true, withEncoderConfiguration: encoder)
                    try channel.pipeline.syncOperations.addHandler(OriginHTTPHandler(
                        routes: routes, log: log, directory: directory, connections: connections, connectionID: id,
                        downlink: downlink, acceptedAt: acceptedAt))
                }
            }
        let channel = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
        guard let boundPort = channel.localAddress?.port else {
            try? await channel.close().get()
            throw ChannelError.unknownLocalAddress
        }
        return ImageOriginServer(serverChannel: channel, port: boundPort, directory: directory, routes: routes,
                                 log: log, connections: connections, downlink: downlink)
    }

    /// Stops listening, closes every open connection (stalled ones included; their requests are logged as
    /// complete, not as the client going away) and fails pending ``waitForCompletedRequests(count:timeout:)``
    /// calls with ``OriginServerError/shutDown``. Calling it again does nothing.
    public func shutdown() async throws {
        do {
            try await serverChannel.close().get()
        } catch ChannelError.alreadyClosed {
            // shut down before
        }
        await connections.closeAll()
        log.shutDown()
        isShutDown.store(true, ordering: .releasing)
    }

    // MARK: URLs

    /// The URL of `path` on this server, e.g. `url(for: "/a.jpg")` → `http://127.0.0.1:PORT/a.jpg`. A
    /// missing leading `/` is added; characters a URL cannot hold are percent-encoded (a `?query` is kept).
    public func url(for path: String) -> URL {
        let path = path.hasPrefix("/") ? path : "/" + path
        if let url = URL(string: baseURL.absoluteString + path) { return url }
        var allowed = CharacterSet.urlPathAllowed
        allowed.insert(charactersIn: "?&=;%")
        let encoded = path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path
        return URL(string: baseURL.absoluteString + encoded) ?? baseURL
    }

    // MARK: Assets

    /// Serves `data` at `path` (`/a.jpg`; with `?query` to serve it for that query only) from the next request on.
    /// - Parameters:
    ///   - contentType: the `Content-Type`; `nil` derives it from the path's extension
    ///     (`application/octet-stream` when unknown).
    ///   - lastModified: the `Last-Modified` date (to the second); `nil` sends none.
    ///   - etag: the `ETag`, quoted if you did not quote it; `nil` derives a strong one from the content
    ///     (quoted hex of a content hash), an empty string sends none.
    ///   - cacheControl: the `Cache-Control` value (`"max-age=60"`, `"no-store"`, …); `nil` sends none.
    public func setAsset(_ data: Data, at path: String, contentType: String? = nil,
                         lastModified: Date? = ImageOriginServer.defaultLastModified, etag: String? = nil,
                         cacheControl: String? = nil) {
        let asset = OriginAsset(
            data: data, contentType: contentType ?? OriginContentType.forPath(path), lastModified: lastModified,
            etag: etag.map(OriginAsset.normalizedETag) ?? OriginAsset.derivedETag(for: data), cacheControl: cacheControl)
        routes.setAsset(asset, at: path)
    }

    /// Serves `path` by content negotiation from the next request on: each request gets the first of
    /// `variants` whose media type its `Accept` header accepts, else the last one (see ``OriginVariant``).
    /// Each variant has its own strong `ETag` and ``defaultLastModified``; an asset set at the same path
    /// with ``setAsset(_:at:contentType:lastModified:etag:)`` wins. An empty list stops the negotiation.
    /// - Parameters:
    ///   - variants: the representations, most preferred first; the last is the fallback.
    ///   - path: the route, as for ``setAsset(_:at:contentType:lastModified:etag:)``.
    public func setVariants(_ variants: [OriginVariant], at path: String) {
        routes.variants.set(variants.map {
            OriginAsset(data: $0.data, contentType: $0.mediaType, lastModified: Self.defaultLastModified,
                        etag: OriginAsset.derivedETag(for: $0.data))
        }, at: path)
    }

    /// Stops serving the in-memory asset at `path` (a directory file at that path is served again).
    public func removeAsset(at path: String) {
        routes.removeAsset(at: path)
    }

    /// The `ETag` the server sends for the in-memory asset at `path`, or `nil` (no asset, or sent without one).
    public func etag(at path: String) -> String? {
        routes.asset(at: path)?.etag
    }

    // MARK: Shaping and faults

    /// Shapes responses to `route` (a path, as for ``setAsset(_:at:contentType:lastModified:etag:cacheControl:)``), or every
    /// route without its own shaping when `route` is `nil`. `nil` shaping removes the route's own (or, for the
    /// global one, resets to ``OriginShaping/none``). Applies from the next request on.
    public func setShaping(_ shaping: OriginShaping?, for route: String? = nil) {
        routes.setShaping(shaping, for: route)
    }

    /// Scripts `faults` for `route` (or for every route without its own faults when `route` is `nil`),
    /// replacing any set before. With `count`, they apply to the next `count` requests for the route and then
    /// clear themselves ("the first request fails, the retry succeeds"); `nil` keeps them until cleared.
    /// An empty list or a count of 0 clears.
    public func setFaults(_ faults: [OriginFault], for route: String?, count: Int? = nil) {
        routes.setFaults(faults, for: route, count: count)
    }

    /// Puts every client behind one simulated network link (see ``OriginLink``): its downlink shared fairly by
    /// all responses sending a body, its round trip before each response head, its handshake round trips
    /// before each new connection's first response, and its jitter and stalls. Routes' ``OriginShaping``
    /// still applies on top. `nil` (the default) removes the link: each response is then shaped on its own.
    ///
    /// A new bandwidth applies at once, to bodies in flight too; round trips, jitter and stalls apply to
    /// responses planned from then on.
    public func setLink(_ link: OriginLink?) {
        downlink.setLink(link)
    }

    /// The link set with ``setLink(_:)``, or `nil`.
    public var link: OriginLink? { downlink.link }

    /// Removes the faults of `route` (`nil`: the global ones).
    public func clearFaults(for route: String?) {
        routes.clearFaults(for: route)
    }

    // MARK: Request log

    /// Every request read since the last ``clearLog()``, in the order read, including exchanges still in
    /// progress (see ``OriginRequestRecord/isComplete``).
    public var requestLog: [OriginRequestRecord] { log.records }

    /// The records of ``requestLog`` whose path is `path` (compared decoded, whatever the query).
    public func requests(to path: String) -> [OriginRequestRecord] {
        let key = OriginRoutes.key(path)
        return log.records.filter { OriginRoutes.key($0.path) == key }
    }

    /// Empties the log and restarts the completed-request count used by ``waitForCompletedRequests(count:timeout:)``.
    public func clearLog() {
        log.clear()
    }

    /// Returns once `count` requests logged since the last ``clearLog()`` have completed (their response
    /// ended, the connection closed, or the client left).
    /// - Throws: ``OriginServerError/timedOut(expected:completed:)`` when `timeout` passes first,
    ///   ``OriginServerError/shutDown`` when the server shuts down first, `CancellationError` when cancelled.
    public func waitForCompletedRequests(count: Int, timeout: Duration = .seconds(10)) async throws {
        try await log.waitForCompleted(count: count, timeout: timeout)
    }

    /// Keeps only the newest `capacity` records in ``requestLog`` (completed ones are dropped first), for a
    /// long-running server; `nil` (the default) keeps every record.
    public func setRequestLogCapacity(_ capacity: Int?) {
        log.setCapacity(capacity)
    }

    /// Calls `observer` with each request's record when its exchange completes, before
    /// ``waitForCompletedRequests(count:timeout:)`` callers that completion satisfies are resumed. It runs on an
    /// event-loop thread: keep it short and hop elsewhere for I/O. `nil` removes it.
    public func setRequestObserver(_ observer: (@Sendable (OriginRequestRecord) -> Void)?) {
        log.setObserver(observer)
    }

    /// The number of client connections open now.
    public var openConnectionCount: Int { connections.count }
}
