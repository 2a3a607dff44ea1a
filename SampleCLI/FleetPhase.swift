import Foundation
import ImageOriginServer
import ImagePipelineRedis
import PipelineLocking

/// What one run of the fleet came to: the origin's side (requests, bytes) and the workers' (tier hits, lease
/// waits, failures, whether every worker holds the same bytes of each image).
struct FleetPhase {
    var originRequests = 0
    var originRequestsPerImage: [String: Int] = [:]
    var originBytes = 0
    var tierHits = 0
    var leaseWaits = 0
    var fetches = 0
    var failures = 0
    var wallMs = 0.0
    var identicalBytes = true
    var killedWorker: Int32?
    var workerExitStatuses: [Int32] = []

    var json: [String: Any] {
        var object: [String: Any] = [
            "originRequests": originRequests, "originRequestsPerImage": originRequestsPerImage, "originBytes": originBytes,
            "tierHits": tierHits, "leaseWaits": leaseWaits, "fetches": fetches, "failures": failures,
            "wallMs": (wallMs * 10).rounded() / 10, "identicalBytes": identicalBytes, "workerExitStatuses": workerExitStatuses,
        ]
        if let killedWorker { object["killedWorkerPid"] = killedWorker }
        return object
    }
}

/// How to run one phase: which workers, against what, with which faults.
struct FleetPhasePlan {
    var workers: Int
    var urls: [URL]
    /// The SHA-256 of each image as the origin serves it, by URL.
    var expectedHashes: [String: String]
    var redisURL: String?
    var namespace: String
    var target: String
    var leaseTTLMilliseconds: Int
    var secret: String?
    var killRedisAt: Double?
    var stallRedis: Bool
    var killWorkerHoldingLease: Bool
    var seed: UInt64
}

extension FleetPhasePlan {
    /// Runs the workers to their end and tallies what they and the origin saw.
    func run(origin: ImageOriginServer, redis: LocalRedisServer?) async throws -> FleetPhase {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-fleet-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let firstSequence = (origin.requestLog.map(\.sequence).max() ?? -1) + 1
        let started = ContinuousClock.now
        let killed = Locked<Int32?>(nil)
        var processes: [FleetProcess] = []
        var generator = FleetShuffleGenerator(seed: seed)
        for index in 0..<workers {
            var arguments = urls.shuffled(using: &generator).map(\.absoluteString)
            arguments += ["--cache-dir", root.appendingPathComponent("worker\(index)").path, "--target", target,
                          "--lease-ttl-ms", "\(leaseTTLMilliseconds)", "--namespace", namespace]
            if let redisURL { arguments += ["--redis", redisURL] }
            if let secret { arguments += ["--secret", secret] }
            let announces = killWorkerHoldingLease && index == 0 && redisURL != nil
            if announces { arguments.append("--announce-downloads") }
            let box = Locked<FleetProcess?>(nil)
            let process = try FleetProcess(arguments: arguments) { line in
                // The first trip to the origin of worker 0 is made under the image's fill lease: kill it there.
                guard announces, line.contains("\"downloading\"") else { return }
                let first = killed.withLock { pid -> Bool in
                    guard pid == nil, let process = box.withLock({ $0 }) else { return false }
                    pid = process.pid
                    return true
                }
                if first { box.withLock { $0 }?.kill() }
            }
            box.withLock { $0 = process }
            processes.append(process)
            if announces {
                // The others start once worker 0 died holding a lease, so that they meet the orphaned lease
                // rather than racing worker 0 for it.
                let deadline = ContinuousClock.now + .seconds(10)
                while killed.withLock({ $0 }) == nil, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
        }
        let faults = Task {
            if stallRedis, let redis {
                try await Task.sleep(for: .milliseconds(300))
                redis.pause()
            }
            if let killRedisAt, let redis {
                try await Task.sleep(for: .milliseconds(Int(killRedisAt * 1000)))
                await redis.killNow()
            }
        }
        var phase = FleetPhase()
        var hashes: [String: Set<String>] = [:]
        for process in processes {
            let (lines, status) = await process.wait()
            phase.workerExitStatuses.append(status)
            for line in lines {
                if let summary = line["summary"] as? [String: Any] {
                    phase.tierHits += summary["tierHits"] as? Int ?? 0
                    phase.leaseWaits += summary["leaseWaits"] as? Int ?? 0
                    phase.fetches += summary["fetches"] as? Int ?? 0
                    phase.failures += summary["failures"] as? Int ?? 0
                } else if let url = line["url"] as? String, let hash = line["sha256"] as? String {
                    hashes[url, default: []].insert(hash)
                }
            }
        }
        phase.wallMs = (ContinuousClock.now - started).milliseconds
        faults.cancel()
        if stallRedis { redis?.resume() }
        phase.killedWorker = killed.withLock { $0 }
        phase.identicalBytes = hashes.allSatisfy { url, found in found == [expectedHashes[url] ?? ""] }
        let records = origin.requestLog.filter { $0.sequence >= firstSequence && $0.method == "GET" }
        phase.originRequests = records.count
        phase.originBytes = records.reduce(0) { $0 + $1.bytesSent }
        for record in records { phase.originRequestsPerImage[record.path, default: 0] += 1 }
        return phase
    }
}

/// A small deterministic generator (SplitMix64), so that a fleet run's shuffles repeat with its seed.
struct FleetShuffleGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
