import ArgumentParser
import Foundation
import ImagePipelineKit
import ImagePipelineRedis
import NIOCore

/// `sample-cli bench tier`: a shared-tier hit against its anchor, a raw Redis `GET` of the same bytes over the
/// same connection, with a local disk hit of the same image beside them.
struct TierBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tier",
        abstract: "Median microseconds of a Redis tier hit against a raw GET of the same bytes (and a disk hit).",
        discussion: """
            Starts a private redis-server (unless --redis), stores one noise JPEG of about --kib KiB as a tier value \
            (header, checksum and, with --secret, an HMAC-SHA256) and as raw bytes, then alternates --iterations \
            rounds of: a raw GET, a tier hit (GET, checks, metadata), the same with the value signed, and a read of \
            the same image from a disk cache's entry. One pooled connection, so every Redis read shares the socket. \
            Prints the medians and the ratio of the tier hit to the raw GET.
            """
    )

    @Option(help: ArgumentHelp("The image's approximate size in KiB.", valueName: "KIB"))
    var kib = 200

    @Option(help: "Rounds of the alternating reads.")
    var iterations = 400

    @Option(help: ArgumentHelp("Use this Redis instead of a private redis-server.", valueName: "URL"))
    var redis: String?

    @OptionGroup var output: JSONOutput

    mutating func run() async throws {
        let server = redis == nil ? try await LocalRedisServer.start() : nil
        var configuration = try RedisConfiguration(url: redis ?? server?.url ?? "")
        configuration.poolSize = 1
        configuration.operationTimeout = .seconds(2)
        let client = RedisClient(configuration: configuration)
        // A noise JPEG's size grows with its area: about 0.67 bytes per pixel at this quality.
        let side = Int((Double(kib * 1024) / 0.67).squareRoot())
        let image = try FleetImages.make(count: 1, side: side)[0]
        let url = URL(string: "https://origin.example/bench.jpg")!
        let value = SharedCacheValue(data: image, url: url, dimensions: PixelSize(width: side, height: side),
                                     contentType: "image/jpeg", timeToLive: 3600)
        let plain = RedisImageCache(client: client)
        let signed = RedisImageCache(client: client, signingSecret: Data("bench-secret".utf8))
        let plainKey = SharedCacheKey(namespace: "bench", pipeline: "plain", identifier: url.absoluteString)
        let signedKey = SharedCacheKey(namespace: "bench", pipeline: "signed", identifier: url.absoluteString)
        try await plain.store(value, for: plainKey)
        try await signed.store(value, for: signedKey)
        _ = try await client.send("SET", bytes: [ByteBuffer(string: "bench:raw"), ByteBuffer(bytes: image)])

        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-tier-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let pipeline = try ImagePipeline(identifier: "tier-bench", configuration: GlobalConfiguration(), cacheRoot: root)
        guard let disk = pipeline.diskCache else { throw CommandFailure("no disk cache under \(root.path)") }
        _ = disk.storeComplete(CachedImageData(data: image, url: url, dimensions: value.dimensions), identifier: "bench")

        var raw: [Double] = [], tier: [Double] = [], tierSigned: [Double] = [], diskHit: [Double] = []
        for round in -20..<iterations {
            let started = ContinuousClock.now
            guard case .bulkString(let bytes?) = try await client.send("GET", ["bench:raw"]) else { throw ExitCode(1) }
            let rawBytes = Data(buffer: bytes)
            let afterRaw = ContinuousClock.now
            guard case .hit(let hit) = try await plain.value(for: plainKey) else { throw ExitCode(1) }
            let afterTier = ContinuousClock.now
            guard case .hit(let signedHit) = try await signed.value(for: signedKey) else { throw ExitCode(1) }
            let afterSigned = ContinuousClock.now
            guard let entry = disk.entry(for: "bench")?.complete else { throw ExitCode(1) }
            let afterDisk = ContinuousClock.now
            guard rawBytes.count == image.count, hit.data.count == image.count, signedHit.data.count == image.count,
                  entry.data.count == image.count else { throw ExitCode(1) }
            // The first rounds warm the connection, the allocator and the page cache.
            guard round >= 0 else { continue }
            raw.append((afterRaw - started).microseconds)
            tier.append((afterTier - afterRaw).microseconds)
            tierSigned.append((afterSigned - afterTier).microseconds)
            diskHit.append((afterDisk - afterSigned).microseconds)
        }
        await client.close()
        await server?.stop()
        let medians = [raw, tier, tierSigned, diskHit].map { $0.sorted()[$0.count / 2] }
        output.say("image: \(image.count) bytes (\(side)x\(side) JPEG), \(iterations) rounds, one connection")
        output.say(String(format: "raw GET            median %8.1f us", medians[0]))
        output.say(String(format: "tier hit           median %8.1f us   %.2fx raw", medians[1], medians[1] / medians[0]))
        output.say(String(format: "tier hit (signed)  median %8.1f us   %.2fx raw", medians[2], medians[2] / medians[0]))
        output.say(String(format: "disk hit           median %8.1f us   %.2fx raw", medians[3], medians[3] / medians[0]))
        try output.write(object: [
            "benchmark": "tier", "imageBytes": image.count, "rounds": iterations,
            "medianMicroseconds": ["rawGet": medians[0], "tierHit": medians[1], "signedTierHit": medians[2], "diskHit": medians[3]],
            "ratioToRawGet": ["tierHit": medians[1] / medians[0], "signedTierHit": medians[2] / medians[0],
                              "diskHit": medians[3] / medians[0]],
        ])
    }
}

extension Duration {
    /// The duration in microseconds.
    fileprivate var microseconds: Double { milliseconds * 1000 }
}
