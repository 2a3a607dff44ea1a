import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import ImagePipelineRedis
import TestSupport

/// A private redis-server, the loopback origin with distinct JPEGs, and pipelines that share the tier: each
/// with its own configuration and cache directory, as separate processes of a fleet would have, and the same
/// name in the tier's keys.
final class TierHarness: Sendable {
    let redis: LocalRedisServer?
    let origin: ImageOriginServer
    let images: [Data]
    let root: URL
    static let fleetSecret = Data("fleet-secret-for-tests".utf8)

    private init(redis: LocalRedisServer?, origin: ImageOriginServer, images: [Data], root: URL) {
        self.redis = redis
        self.origin = origin
        self.images = images
        self.root = root
    }

    /// Starts everything; `body` runs with it, and everything stops afterwards, whatever `body` threw.
    static func run(imageCount: Int = 4, side: Int = 64, redis startsRedis: Bool = true, maxMemoryBytes: Int? = nil,
                    _ body: (TierHarness) async throws -> Void) async throws {
        let redis = startsRedis ? try await LocalRedisServer.start(maxMemoryBytes: maxMemoryBytes) : nil
        let origin = try await ImageOriginServer.start(port: 0)
        let images = try makeImages(count: imageCount, side: side)
        for (index, image) in images.enumerated() {
            origin.setAsset(image, at: "/\(index).jpg", contentType: "image/jpeg")
        }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-tier-\(UUID().uuidString)")
        let harness = TierHarness(redis: redis, origin: origin, images: images, root: root)
        var failure: (any Error)?
        do { try await body(harness) } catch { failure = error }
        try? await origin.shutdown()
        await redis?.stop()
        try? FileManager.default.removeItem(at: root)
        if let failure { throw failure }
    }

    func url(_ index: Int) -> URL { origin.url(for: "/\(index).jpg") }

    func originRequests(_ index: Int) -> Int { origin.requests(to: "/\(index).jpg").count }

    /// A fleet member: its own configuration, cache directory and Redis client.
    struct Member {
        let pipeline: ImagePipeline
        let configuration: GlobalConfiguration
        let problems: ProblemLog
        let cache: RedisImageCache
    }

    /// A member talking to `redisConfiguration` (default: the harness's server), signing with `secret`.
    func member(_ name: String, redisConfiguration: RedisConfiguration? = nil, secret: Data? = TierHarness.fleetSecret,
                leaseTimeToLive: Duration = .seconds(5)) throws -> Member {
        let configuration = GlobalConfiguration()
        configuration.imageDownloader = HTTPClientDownloader()
        let problems = ProblemLog()
        configuration.problemObserver = problems
        let pipeline = try ImagePipeline(identifier: "\(name)-\(UUID().uuidString.prefix(8))", configuration: configuration,
                                         cacheRoot: root.appendingPathComponent(name))
        guard var clientConfiguration = redisConfiguration ?? redis.map(Self.patientConfiguration) else {
            throw CocoaError(.featureUnsupported)
        }
        if redisConfiguration == nil { clientConfiguration = Self.patient(clientConfiguration) }
        let cache = RedisImageCache(client: RedisClient(configuration: clientConfiguration), signingSecret: secret)
        pipeline.sharedCache = SharedCacheConfiguration(cache: cache, namespace: "test", pipelineName: "fleet",
                                                        operationTimeout: .seconds(3), leaseTimeToLive: leaseTimeToLive)
        return Member(pipeline: pipeline, configuration: configuration, problems: problems, cache: cache)
    }

    /// The sources a member fetches from: not the disks, because in one process every live pipeline's disk is
    /// a source too (another process's disk would not be).
    static let fleetSources: LoadingSources = [.memoryCache, .sharedCache, .network]

    /// A client configuration for `redis` with timeouts a debug build on a loaded 2-core machine meets (the
    /// defaults, 250 ms, are for production builds; the fault tests that need them short set their own).
    static func patientConfiguration(_ redis: LocalRedisServer) -> RedisConfiguration {
        patient(redis.configuration)
    }

    static func patient(_ configuration: RedisConfiguration) -> RedisConfiguration {
        var configuration = configuration
        configuration.operationTimeout = .seconds(2)
        configuration.connectTimeout = .seconds(2)
        return configuration
    }

    /// Fetches image `index` at its own size through `member`.
    func fetch(_ index: Int, with member: Member, sources: LoadingSources = TierHarness.fleetSources) async throws
        -> FetchResult {
        try await member.pipeline.image(for: GenericFetchRequest(url: url(index), loadingSources: sources))
    }

    /// The raw Redis key of image `index` (as the members file it).
    func key(_ index: Int) -> SharedCacheKey {
        SharedCacheKey(namespace: "test", pipeline: "fleet", identifier: url(index).absoluteString)
    }

    /// A client of the harness's server, for planting and reading raw values.
    func rawClient() throws -> RedisClient {
        guard let redis else { throw CocoaError(.featureUnsupported) }
        return RedisClient(configuration: Self.patientConfiguration(redis))
    }

    /// JPEGs of noise (so they do not compress away), `side` × `side`, distinct per index.
    static func makeImages(count: Int, side: Int) throws -> [Data] {
        var generator = SystemRandomNumberGenerator()
        return try (0..<count).map { index in
            let bitmap = try Bitmap(width: side, height: side) { pixels, bytesPerRow in
                for row in 0..<side {
                    let line = pixels.advanced(by: row * bytesPerRow).assumingMemoryBound(to: UInt8.self)
                    for column in 0..<side {
                        line[column * 4] = UInt8(index % 256)
                        line[column * 4 + 1] = UInt8.random(in: 0...255, using: &generator)
                        line[column * 4 + 2] = UInt8.random(in: 0...255, using: &generator)
                        line[column * 4 + 3] = 255
                    }
                }
            }
            return try CodecCatalogue.shared.encode(ImageContainer(bitmap: bitmap), as: .jpeg, quality: 0.9)
        }
    }
}
