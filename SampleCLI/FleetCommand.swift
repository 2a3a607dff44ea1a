import ArgumentParser
import Crypto
import Foundation
import ImageOriginServer
import ImagePipelineKit
import ImagePipelineRedis

/// `sample-cli fleet`: the fleet-shared tier's demo. N worker processes fetch the same images from one origin,
/// first through a shared Redis tier, then (new instances, empty disks) again through the warm tier, then
/// without the tier; prints what the origin saw in each run.
struct FleetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet",
        abstract: "Run a fleet of worker processes against one origin, with and without a Redis shared tier.",
        discussion: """
            Starts the loopback origin (with --latency-ms before each response head) serving --images distinct \
            JPEGs, a private redis-server in a temporary directory (unless --redis names one), and --workers \
            processes, each with its own empty cache directory, fetching every image in its own shuffled order at \
            --target. Three runs: cold with the tier, warm (new instances with empty disks against the warm tier), \
            and cold without the tier. Prints origin requests (and per image), tier hits, lease waits (fetches \
            that waited for another worker's download), bytes from the origin and wall time for each. --json (or --json-file FILE) \
            writes the report: {workers, images, latencyMs, originRequests, warmOriginRequests, withoutTierOriginRequests, \
            withTier, warm, withoutTier}, \
            each run as {originRequests, originRequestsPerImage, originBytes, tierHits, leaseWaits, fetches, \
            failures, wallMs, identicalBytes, workerExitStatuses}. Fault options exercise the tier's failure \
            handling; every fetch should still succeed. Exit 0 when every fetch of every run succeeded.
            """
    )

    @Option(help: "Worker processes.")
    var workers = 4

    @Option(help: "Distinct images every worker fetches.")
    var images = 32

    @Option(help: ArgumentHelp("Use this Redis instead of a private redis-server (redis://[user:pass@]host:port or unix:///path?password=…).",
                               valueName: "URL"))
    var redis: String?

    @OptionGroup var output: JSONOutput

    @Option(help: ArgumentHelp("The origin's delay before each response head, in milliseconds.", valueName: "MS"))
    var latencyMs = 50

    @Option(help: ArgumentHelp("Cap each origin response at this many bytes per second.", valueName: "BYTES/s"))
    var rate: Int?

    @Option(help: ArgumentHelp("The images' side in pixels (noise JPEGs, about 0.66 bytes per pixel).", valueName: "PX"))
    var imageSide = 256

    @Option(help: ArgumentHelp("The size the workers decode to.", valueName: "WxH"))
    var target = "128x128"

    @Option(help: ArgumentHelp("The fill lease's time to live; a worker waits at most twice this for another's download.",
                               valueName: "MS"))
    var leaseTtlMs = 5000

    @Option(help: "Sign every value with this fleet secret (HMAC-SHA256); unsigned values are then refused.")
    var secret: String?

    @Option(help: ArgumentHelp("Fault: SIGKILL the private redis-server this many seconds into the cold run.",
                               valueName: "SECONDS"))
    var killRedisAt: Double?

    @Flag(help: "Fault: SIGSTOP the private redis-server 0.3 s into the cold run (SIGCONT after it).")
    var stallRedis = false

    @Flag(help: "Fault: start worker 0 first and SIGKILL it as it starts its first origin download, holding that image's fill lease; then start the others.")
    var killWorkerHoldingLease = false

    @Flag(help: "Skip the warm run.")
    var skipWarm = false

    @Flag(help: "Skip the run without the tier (its figures are then null).")
    var skipBaseline = false

    @Option(help: "Seed of the workers' shuffles.")
    var seed: UInt64 = 1

    func validate() throws {
        guard workers >= 1, images >= 1 else { throw ValidationError("--workers and --images must be at least 1") }
        guard imageSide >= 8, imageSide <= 4096 else { throw ValidationError("--image-side must be within 8...4096") }
        guard TargetOption(argument: target) != nil else { throw ValidationError("--target must be WxH") }
        guard latencyMs >= 0, leaseTtlMs >= 1 else { throw ValidationError("--latency-ms and --lease-ttl-ms must be positive") }
        if let rate, rate < 1 { throw ValidationError("--rate must be at least 1") }
        if redis != nil, killRedisAt != nil || stallRedis {
            throw ValidationError("--kill-redis-at and --stall-redis act on the private redis-server only")
        }
        if let redis { _ = try RedisConfiguration(url: redis) }
    }

    func run() async throws {
        let origin = try await ImageOriginServer.start(port: 0)
        origin.setShaping(OriginShaping(bytesPerSecond: rate, firstByteLatency: .milliseconds(latencyMs)))
        var urls: [URL] = []
        var hashes: [String: String] = [:]
        for (index, image) in try FleetImages.make(count: images, side: imageSide).enumerated() {
            origin.setAsset(image, at: "/fleet/\(index).jpg", contentType: "image/jpeg")
            let url = origin.url(for: "/fleet/\(index).jpg")
            urls.append(url)
            hashes[url.absoluteString] = SHA256.hash(data: image).map { String(format: "%02x", $0) }.joined()
        }
        let server = redis == nil ? try await LocalRedisServer.start() : nil
        let redisURL = redis ?? server?.url
        var plan = FleetPhasePlan(
            workers: workers, urls: urls, expectedHashes: hashes, redisURL: redisURL,
            namespace: "fleet-\(UInt32.random(in: 0...UInt32.max))", target: target, leaseTTLMilliseconds: leaseTtlMs,
            secret: secret, killRedisAt: killRedisAt, stallRedis: stallRedis, killWorkerHoldingLease: killWorkerHoldingLease,
            seed: seed)
        log("cold run with the tier (\(workers) workers × \(images) images, origin latency \(latencyMs) ms)…")
        let withTier = try await plan.run(origin: origin, redis: server)
        plan.killRedisAt = nil
        plan.stallRedis = false
        plan.killWorkerHoldingLease = false
        plan.seed &+= 1
        var warm: FleetPhase?
        if !skipWarm {
            // After --kill-redis-at there is no tier left: the warm run then shows the fleet without one.
            log("warm run (new instances, empty disks)…")
            warm = try await plan.run(origin: origin, redis: server)
        }
        var withoutTier: FleetPhase?
        if !skipBaseline {
            log("cold run without the tier…")
            plan.redisURL = nil
            plan.seed &+= 1
            withoutTier = try await plan.run(origin: origin, redis: nil)
        }
        await server?.stop()
        try await origin.shutdown()

        let report = FleetReport(workers: workers, images: images, latencyMs: latencyMs, redis: redis ?? "private redis-server",
                                 withTier: withTier, warm: warm, withoutTier: withoutTier)
        output.say(report.text, terminator: "")
        try output.write(report.jsonData)
        let phases = [withTier] + [warm, withoutTier].compactMap { $0 }
        if phases.contains(where: { $0.failures > 0 || $0.fetches < $0.workerExitStatuses.count * images && $0.killedWorker == nil }) {
            throw ExitCode(1)
        }
    }

    private func log(_ message: String) {
        FileHandle.standardError.write(Data("fleet: \(message)\n".utf8))
    }
}
