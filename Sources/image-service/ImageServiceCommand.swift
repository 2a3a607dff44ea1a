import ArgumentParser
import Foundation
import Hummingbird
import ImagePipelineKit
import ImagePipelineRedis
import ImagePipelineService
import Logging
import Metrics
import Prometheus
import ServiceLifecycle

/// `image-service`: thumbnails over HTTP in thumbor's URL syntax, on its own.
@main
struct ImageServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "image-service",
        abstract: "Serve thumbnails in thumbor's URL syntax: /SIGNATURE|unsafe/[fit-in/]WxH/[filters:…/]SOURCE.",
        discussion: """
        Every option can also be set by the environment variable named in its help; a flag wins over the \
        variable. GET /healthz answers 200, GET /metrics Prometheus text. SIGTERM or SIGINT stops accepting \
        connections, lets the requests in flight finish (up to --shutdown-grace seconds) and exits 0. A usage \
        error exits 64 with the usage text; a failure at start exits 1 with one line on standard error.
        """,
        version: LibraryVersion.version)

    @Option(name: .long, help: "Address to listen on (IMAGE_SERVICE_HOST; default 127.0.0.1).")
    var host: String?

    @Option(name: .long, help: "Port to listen on; 0 picks a free one (IMAGE_SERVICE_PORT; default 8888). The first line on standard output is 'listening on http://ADDR:PORT'.")
    var port: Int?

    @Option(name: .customLong("security-key"), help: "thumbor security key; repeat to rotate: the first signs, all verify (IMAGE_SERVICE_SECURITY_KEYS, comma-separated).")
    var securityKeys: [String] = []

    @Flag(name: .customLong("allow-unsafe-url"), help: "Render /unsafe/… paths without a signature (IMAGE_SERVICE_ALLOW_UNSAFE_URL=1).")
    var allowsUnsafeURLs = false

    @Option(name: .customLong("allowed-source"), help: "A source host, HOST:PORT, *.DOMAIN or URL prefix that may be fetched; repeatable; none allows any public host (IMAGE_SERVICE_ALLOWED_SOURCES, comma-separated).")
    var allowedSources: [String] = []

    @Flag(name: .customLong("allow-private-sources"), help: "Allow sources on loopback, private and link-local addresses, for tests and demos (IMAGE_SERVICE_ALLOW_PRIVATE_SOURCES=1).")
    var allowsPrivateSources = false

    @Option(name: .customLong("cache-dir"), help: "Directory of the source and result caches, shared with other processes using it (IMAGE_SERVICE_CACHE_DIR; default a temporary directory).")
    var cacheDirectory: String?

    @Option(name: .long, help: "redis:// or rediss:// URL of a Redis shared by a fleet for source images (IMAGE_SERVICE_REDIS).")
    var redis: String?

    @Option(name: .customLong("max-source-bytes"), help: "Largest source download, bytes; 413 beyond (IMAGE_SERVICE_MAX_SOURCE_BYTES; default 33554432).")
    var maxSourceBytes: Int?

    @Option(name: .customLong("max-source-pixels"), help: "Most pixels a source may have; 413 beyond (IMAGE_SERVICE_MAX_SOURCE_PIXELS; default 50000000).")
    var maxSourcePixels: Int?

    @Option(name: .customLong("max-output-pixels"), help: "Most pixels of an output; 400 beyond (IMAGE_SERVICE_MAX_OUTPUT_PIXELS; default 16000000).")
    var maxOutputPixels: Int?

    @Option(name: .customLong("deadline"), help: "Seconds a request may take, source download included; 504 beyond (IMAGE_SERVICE_DEADLINE; default 10).")
    var deadlineSeconds: Double?

    @Option(name: .customLong("max-renders"), help: "Renders running at once (IMAGE_SERVICE_MAX_RENDERS; default four per core).")
    var maxRenders: Int?

    @Option(name: .customLong("max-processing"), help: "Decodes, edits and encodes running at once, of all renders (IMAGE_SERVICE_MAX_PROCESSING; default one per core).")
    var maxProcessing: Int?

    @Option(name: .customLong("max-waiting"), help: "Renders waiting for a slot; past it 503 with Retry-After (IMAGE_SERVICE_MAX_WAITING; default eight per core).")
    var maxWaiting: Int?

    @Option(name: .long, help: "Quality of JPEG and WebP outputs without quality() (IMAGE_SERVICE_QUALITY; default 80).")
    var quality: Int?

    @Option(name: .long, help: "Quality of AVIF outputs without quality(), on libavif's scale (IMAGE_SERVICE_AVIF_QUALITY; default 60, libavif's own: at 80 an AVIF thumbnail is larger than the WebP at 80).")
    var avifQuality: Int?

    @Option(name: .customLong("max-age"), help: "Cache-Control max-age of images, seconds (IMAGE_SERVICE_MAX_AGE; default 86400).")
    var maxAge: Int?

    @Option(name: .customLong("shutdown-grace"), help: "Seconds the requests in flight get to finish after SIGTERM (IMAGE_SERVICE_SHUTDOWN_GRACE; default 10).")
    var shutdownGraceSeconds: Double?

    @Option(name: .customLong("log-level"), help: "trace, debug, info (one line per request), notice, warning, error (IMAGE_SERVICE_LOG_LEVEL; default info).")
    var logLevel: String?

    @Flag(name: .long, help: "Also start the embedded origin with the sample photos and serve a page of their thumbnails at / (implies --allow-unsafe-url and --allow-private-sources for that origin).")
    var demo = false

    func validate() throws {
        let settings = try ServiceSettings(self)
        if settings.configuration.securityKeys.isEmpty && !settings.configuration.allowsUnsafeURLs && !demo {
            throw ValidationError("give --security-key (or IMAGE_SERVICE_SECURITY_KEYS), or --allow-unsafe-url")
        }
    }

    func run() async throws {
        var settings = try ServiceSettings(self)
        let logLevel = settings.logLevel
        let logOutput = BufferedStandardError()
        defer { logOutput.flush() }
        LoggingSystem.bootstrap { label in LineLogHandler(label: label, logLevel: logLevel, output: logOutput) }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let logger = Logger(label: "image-service")

        let demoOrigin = demo ? try await DemoOrigin.start() : nil
        if let demoOrigin {
            settings.configuration.allowsUnsafeURLs = true
            settings.configuration.sourcePolicy.allowsPrivateAddresses = true
            if !settings.configuration.sourcePolicy.allowedSources.isEmpty {
                settings.configuration.sourcePolicy.allowedSources.append(demoOrigin.hostAndPort)
            }
        }
        let pipelines: ImageServicePipelines
        do {
            pipelines = try ImageServicePipelines(cacheDirectory: settings.cacheDirectory, limits: settings.configuration.limits,
                                                  sourcePolicy: settings.configuration.sourcePolicy)
        } catch {
            throw RuntimeFailure("cannot open the caches in \(settings.cacheDirectory.path): \(error)")
        }
        // The pipelines' problems an operator should act on (a failing disk, an unreachable Redis) go to the log.
        pipelines.configuration.logger = logger
        if let redis = settings.redis {
            let client = RedisClient(configuration: try RedisConfiguration(url: redis), logger: logger)
            pipelines.sources.sharedCache = SharedCacheConfiguration(cache: RedisImageCache(client: client), namespace: "image-service")
        }
        let service = ImageService(configuration: settings.configuration, sourcePipeline: pipelines.sources,
                                   resultStore: pipelines.results, logger: logger)
        let routes = ImageServiceRoutes(service: service, metricsExposition: { registry.emitToString() },
                                        demoPage: demoOrigin.map { DemoPage.html(origin: $0) })
        let router = Router()
        routes.register(on: router)
        let (host, port) = (settings.host, settings.port)
        let serverName = "image-service"
        let app = Application(
            router: router,
            // Thumbnails the result cache holds in memory, and the 503s of an overload, are answered on the event
            // loop; the rest by the routes.
            server: .http1(configuration: .init(
                additionalChannelHandlers: [CachedAnswerHandler(service: service, serverName: serverName)])),
            configuration: .init(address: .hostname(host, port: port), serverName: serverName),
            onServerRunning: { channel in
                // Written straight to the descriptor: the line must reach a reading parent at once.
                let line = "listening on http://\(host):\(channel.localAddress?.port ?? port)\n"
                FileHandle.standardOutput.write(Data(line.utf8))
            },
            logger: logger)
        var groupConfiguration = ServiceGroupConfiguration(
            services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = settings.shutdownGrace
        let group = ServiceGroup(configuration: groupConfiguration)
        try await group.run()
        try? await pipelines.shutdown()
        try? await demoOrigin?.shutdown()
    }
}

/// A failure after the arguments were accepted: one line on standard error and exit status 1 (usage errors
/// exit 64 with the usage text).
struct RuntimeFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
