// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "ImagePipelineKit",
    products: [
        .library(name: "ImagePipelineKit", targets: ["ImagePipelineKit"]),
        .library(name: "ImagePipelineHTTPClient", targets: ["ImagePipelineHTTPClient"]),
        .library(name: "ImageOriginServer", targets: ["ImageOriginServer"]),
        .library(name: "ImagePipelineRedis", targets: ["ImagePipelineRedis"]),
        .library(name: "ImagePipelineService", targets: ["ImagePipelineService"]),
        .library(name: "ThumborURLs", targets: ["ThumborURLs"]),
        .executable(name: "sample-cli", targets: ["SampleCLI"]),
        .executable(name: "image-service", targets: ["image-service"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.29.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.3.0"),
        // The image service's HTTP front, lifecycle and /metrics. Hummingbird without its default traits: the
        // service takes its configuration from flags and the environment, not from swift-configuration.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // HTTP parts as swift-http-types values, for the service's handler on Hummingbird's channel.
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // Debian's C image libraries (scripts/install-system-deps.sh installs them).
        .systemLibrary(name: "CJPEG", pkgConfig: "libjpeg", providers: [.apt(["libjpeg62-turbo-dev"])]),
        .systemLibrary(name: "CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        .systemLibrary(name: "CGIF", pkgConfig: "libgif", providers: [.apt(["libgif-dev"])]),
        .systemLibrary(name: "CEXIF", pkgConfig: "libexif", providers: [.apt(["libexif-dev"])]),
        .systemLibrary(name: "CWebP", pkgConfig: "libwebpdemux", providers: [.apt(["libwebp-dev"])]),
        // libavif and libjxl without pkg-config: their .pc files add -D flags SwiftPM prohibits (a warning on
        // every build), and Debian puts both headers in /usr/include, where the compiler looks anyway. Neither
        // is linked: CCodecsOnDemand loads them at the first decode of their format, which spares every other
        // process the start-up cost of the two and the libraries they pull in.
        .systemLibrary(name: "CAVIF", providers: [.apt(["libavif-dev"])]),
        .systemLibrary(name: "CJXL", providers: [.apt(["libjxl-dev"])]),
        .target(name: "CCodecsOnDemand", dependencies: ["CAVIF", "CJXL"]),
        // SQLite for the disk cache's index.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // libwebpmux's animation encoder: only the tests use it, to make animated WebP fixtures.
        .systemLibrary(name: "CWebPMux", pkgConfig: "libwebpmux", providers: [.apt(["libwebp-dev"])]),
        // Our C: every libjpeg/libpng call that can fail lives here behind a setjmp error manager, and the
        // fixed-point resamplers.
        .target(
            name: "CImageCodecs",
            dependencies: ["CJPEG", "CPNG"]
        ),
        // The scheduler time slice a decoding thread asks for (sched_setattr, which Swift cannot call directly).
        .target(name: "CThreadScheduling"),
        // The lock type every module uses: Synchronization.Mutex, or a pthread mutex in ThreadSanitizer builds.
        .target(name: "PipelineLocking"),
        .target(
            name: "ImagePipelineKit",
            dependencies: [
                "PipelineLocking", "CImageCodecs", "CJPEG", "CPNG", "CGIF", "CEXIF", "CWebP", "CAVIF", "CJXL",
                "CCodecsOnDemand", "CSQLite", "CThreadScheduling",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The AsyncHTTPClient downloader (HTTP/2, connection pooling): a separate product so the core
        // library does not pull in NIO.
        .target(
            name: "ImagePipelineHTTPClient",
            dependencies: [
                "ImagePipelineKit", "PipelineLocking",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The fleet-shared cache tier on Redis: a RESP client on SwiftNIO (pooled, pipelined, with timeouts, a
        // circuit breaker and TLS through swift-nio-ssl) and signed values. A separate product so the core library does not pull in NIO.
        .target(
            name: "ImagePipelineRedis",
            dependencies: [
                "ImagePipelineKit", "PipelineLocking",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        // Loopback HTTP/1.1 origin for tests, the demo and benchmarks: ranges, shaping, scripted faults.
        .target(
            name: "ImageOriginServer",
            dependencies: [
                "ImagePipelineKit", "PipelineLocking",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // thumbor's URL syntax: a path parsed into a thumbnail request and its geometry. A target of its own, on
        // the core library alone, so that the parser is fuzzed without building the HTTP stack.
        .target(name: "ThumborURLs", dependencies: ["ImagePipelineKit"]),
        // Thumbnails over HTTP in thumbor's URL syntax, on Hummingbird: routes a user mounts in their own
        // application. The core library and the downloader never import Hummingbird.
        .target(
            name: "ImagePipelineService",
            dependencies: [
                "ImagePipelineKit", "ImagePipelineHTTPClient", "PipelineLocking", "ThumborURLs",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The service on its own: flags and environment, graceful shutdown, Prometheus' /metrics.
        .executableTarget(
            name: "image-service",
            dependencies: [
                "ImagePipelineService", "ImagePipelineKit", "ImagePipelineHTTPClient", "ImagePipelineRedis", "ImageOriginServer",
                "PipelineLocking",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "SampleCLI",
            dependencies: [
                "ImagePipelineKit",
                "ImageOriginServer",
                "ImagePipelineHTTPClient",
                "ImagePipelineRedis",
                "PipelineLocking",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "SampleCLI",
            exclude: ["Images/LICENSES.md"],
            resources: [.copy("Images")]
        ),
        // Helpers the test targets share (recorders, a problem log, bounded waiting, offloading blocking work).
        .target(name: "TestSupport", dependencies: ["ImagePipelineKit", "PipelineLocking", .product(name: "Logging", package: "swift-log")],
                path: "Tests/TestSupport"),
        .testTarget(
            name: "ImagePipelineKitTests",
            dependencies: [
                "ImagePipelineKit", "CImageCodecs", "CCodecsOnDemand", "CWebP", "CWebPMux", "TestSupport", "PipelineLocking",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "ImagePipelineHTTPClientTests",
            dependencies: [
                "ImagePipelineHTTPClient", "ImagePipelineKit", "ImageOriginServer", "TestSupport", "PipelineLocking",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "ImagePipelineRedisTests",
            dependencies: [
                "ImagePipelineRedis", "ImagePipelineKit", "ImageOriginServer", "ImagePipelineHTTPClient", "TestSupport",
                "PipelineLocking",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "ImagePipelineServiceTests",
            dependencies: [
                "ImagePipelineService", "ThumborURLs", "ImagePipelineKit", "ImageOriginServer", "ImagePipelineRedis", "TestSupport",
                "PipelineLocking", "ImagePipelineHTTPClient",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ]
        ),
        .testTarget(
            name: "ImageOriginServerTests",
            dependencies: [
                "ImageOriginServer", "TestSupport", "PipelineLocking",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
