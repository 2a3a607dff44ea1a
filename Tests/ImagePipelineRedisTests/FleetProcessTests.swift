import Foundation
import ImagePipelineRedis
import Testing
import TestSupport

@Suite("sample-cli fleet: worker processes sharing a real redis-server", .serialized,
       .enabled(if: SampleCLIBinary.path != nil, "sample-cli is not built next to the tests"),
       .enabled(if: LocalRedisServer.executablePath != nil, "redis-server is not installed"))
struct FleetProcessTests {
    /// Runs `sample-cli fleet` with `arguments` and returns its JSON report.
    private func fleet(_ arguments: [String]) async throws -> (run: SampleCLIBinary.Run, report: [String: Any]) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-fleet-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await SampleCLIBinary.run(["fleet"] + arguments + ["--json-file", file.path])
        let report = (try? JSONSerialization.jsonObject(with: Data(contentsOf: file))) as? [String: Any] ?? [:]
        return (run, report)
    }

    @Test("4 processes × 32 images, origin at 200 ms: 32 origin requests, identical bytes; warm re-run 0; 128 without the tier")
    func fleetFetchesEachImageOnce() async throws {
        let (run, report) = try await fleet(["--workers", "4", "--images", "32", "--latency-ms", "200"])
        #expect(run.status == 0, "\(run.stderr.suffix(2000))")
        #expect(report["originRequests"] as? Int == 32, "\(run.stdout)")
        #expect(report["warmOriginRequests"] as? Int == 0, "\(run.stdout)")
        #expect(report["withoutTierOriginRequests"] as? Int == 128, "\(run.stdout)")
        for phase in ["withTier", "warm", "withoutTier"] {
            let figures = report[phase] as? [String: Any] ?? [:]
            #expect(figures["identicalBytes"] as? Bool == true, "\(phase)")
            #expect(figures["failures"] as? Int == 0, "\(phase)")
            #expect(figures["fetches"] as? Int == 128, "\(phase)")
        }
        let perImage = (report["withTier"] as? [String: Any])?["originRequestsPerImage"] as? [String: Int] ?? [:]
        #expect(perImage.count == 32 && perImage.values.allSatisfy { $0 == 1 }, "\(perImage)")
    }

    @Test("A worker SIGKILLed holding a fill lease: the others fall back within the lease TTL, at most 2 origin requests per image")
    func leaseHolderKilled() async throws {
        let (run, report) = try await fleet(["--workers", "4", "--images", "8", "--latency-ms", "200", "--lease-ttl-ms", "4000",
                                             "--kill-worker-holding-lease", "--skip-warm", "--skip-baseline"])
        #expect(run.status == 0, "\(run.stderr.suffix(2000))")
        let withTier = report["withTier"] as? [String: Any] ?? [:]
        #expect(withTier["killedWorkerPid"] is Int)
        #expect(withTier["failures"] as? Int == 0)
        let perImage = withTier["originRequestsPerImage"] as? [String: Int] ?? [:]
        #expect(perImage.count == 8 && perImage.values.allSatisfy { $0 <= 2 }, "\(perImage)")
    }

    @Test("The engine killed mid-run: every fetch of every worker still succeeds")
    func engineKilledUnderTheFleet() async throws {
        let (run, report) = try await fleet(["--workers", "4", "--images", "16", "--latency-ms", "200", "--kill-redis-at", "0.3",
                                             "--skip-warm", "--skip-baseline"])
        #expect(run.status == 0, "\(run.stderr.suffix(2000))")
        let withTier = report["withTier"] as? [String: Any] ?? [:]
        #expect(withTier["failures"] as? Int == 0)
        #expect(withTier["fetches"] as? Int == 64)
        #expect(withTier["identicalBytes"] as? Bool == true)
    }
}
