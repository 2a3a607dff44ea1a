import Foundation
import ImageOriginServer
import ImagePipelineKit
import ImagePipelineRedis
import NIOCore
import Testing
import TestSupport

/// Seconds the fetch spent on the shared-cache step (its metrics are complete once the delegate heard).
private func sharedCacheSeconds(_ operation: FetchOperation) -> TimeInterval? {
    operation.metrics?.info(for: .sharedCache)?.loadDuration
}

@Suite("The fleet-shared tier when Redis fails", .serialized,
       .enabled(if: LocalRedisServer.executablePath != nil, "redis-server is not installed"))
struct SharedCacheFaultTests {
    /// Fetches every image in `indices` at once through `member`; the operations keep their metrics.
    private static func fetchAll(_ indices: Range<Int>, harness: TierHarness, member: TierHarness.Member) async
        -> [(index: Int, result: FetchResult?, operation: FetchOperation)] {
        await withTaskGroup(of: (Int, FetchResult?, FetchOperation).self) { group in
            for index in indices {
                group.addTask {
                    let request = GenericFetchRequest(url: harness.url(index), loadingSources: TierHarness.fleetSources)
                    var made: FetchOperation?
                    let result: FetchResult? = await withCheckedContinuation { continuation in
                        let operation = member.pipeline.operation(with: request) { continuation.resume(returning: try? $0.get()) }
                        made = operation
                        member.pipeline.fetchImage(with: operation)
                    }
                    return (index, result, made!)
                }
            }
            return await group.reduce(into: []) { $0.append((index: $1.0, result: $1.1, operation: $1.2)) }
        }
    }

    @Test("No engine at start: every fetch succeeds from the origin, one outage is reported, no fetch waits long")
    func engineAbsentAtStart() async throws {
        // A server started and stopped leaves a port with nothing listening.
        let gone = try await LocalRedisServer.start()
        let configuration = gone.configuration
        await gone.stop()
        try await TierHarness.run(imageCount: 8, redis: false) { harness in
            let member = try harness.member("alone", redisConfiguration: configuration)
            let fetched = await Self.fetchAll(0..<8, harness: harness, member: member)
            #expect(fetched.allSatisfy { $0.result?.source == .network })
            let outages = member.problems.all.filter { $0.kind == "sharedCacheUnavailable" }
            #expect(outages.count == 1, "\(member.problems.all)")
            // Every fetch tried the tier (and met the refused connection) before it went to the origin.
            #expect(fetched.allSatisfy { sharedCacheSeconds($0.operation) != nil })
        }
    }

    @Test("A wrong password: a typed authentication error in the problem, and fetches work without the tier")
    func wrongPassword() async throws {
        try await TierHarness.run { harness in
            var configuration = TierHarness.patientConfiguration(try #require(harness.redis))
            configuration.password = "wrong"
            let member = try harness.member("locked-out", redisConfiguration: configuration)
            #expect(try await harness.fetch(0, with: member).source == .network)
            let reasons = member.problems.all.compactMap { problem -> String? in
                if case .sharedCacheUnavailable(let reason) = problem { return reason }
                return nil
            }
            #expect(reasons.count == 1, "\(member.problems.all)")
            // The client's own error says what is wrong (the problem may name a timeout instead, on a loaded
            // machine where the connect took longer than its timeout).
            await #expect {
                _ = try await member.cache.client.send("PING", [String]())
            } throws: { error in
                if case .authenticationFailed = error as? RedisClientError { return true }
                return false
            }
        }
    }

    @Test("Wrong TLS (a TLS client on a plain port): one reported outage, and fetches work without the tier")
    func wrongTLS() async throws {
        try await TierHarness.run { harness in
            var configuration = TierHarness.patientConfiguration(try #require(harness.redis))
            configuration.tls = RedisConfiguration.TLS()
            let member = try harness.member("wrong-tls", redisConfiguration: configuration)
            #expect(try await harness.fetch(0, with: member).source == .network)
            #expect(try await harness.fetch(1, with: member).source == .network)
            let outages = member.problems.all.filter { $0.kind == "sharedCacheUnavailable" }
            #expect(outages.count == 1, "\(member.problems.all)")
        }
    }

    @Test("A stalled engine (SIGSTOP): calls give up at their timeout, the breaker opens, the fetches complete")
    func stalledEngine() async throws {
        try await TierHarness.run(imageCount: 8) { harness in
            let redis = try #require(harness.redis)
            // The production timeouts (250 ms per call): the stall is what the test is about.
            let member = try harness.member("stalled", redisConfiguration: redis.configuration)
            // Connections made and warm before the stall.
            #expect(try await harness.fetch(0, with: member).source == .network)
            redis.pause()
            defer { redis.resume() }
            let fetched = await Self.fetchAll(1..<8, harness: harness, member: member)
            #expect(fetched.allSatisfy { $0.result?.source == .network })
            #expect(member.cache.client.circuitBreakerOpenings >= 1)
            #expect(member.problems.all.contains { $0.kind == "sharedCacheCircuitOpen" }, "\(member.problems.all)")
            // A stopped server never answers: that the fetches completed at all is the calls giving up at their
            // timeouts (no wall-clock bound here; a loaded machine stretches every one).
            #expect(fetched.allSatisfy { sharedCacheSeconds($0.operation) != nil })
        }
    }

    @Test("The engine killed while fetches run: none fails")
    func engineKilledMidRun() async throws {
        try await TierHarness.run(imageCount: 16) { harness in
            let redis = try #require(harness.redis)
            harness.origin.setShaping(OriginShaping(firstByteLatency: .milliseconds(100)))
            let member = try harness.member("survivor")
            async let fetched = Self.fetchAll(0..<16, harness: harness, member: member)
            try await Task.sleep(for: .milliseconds(150))
            await redis.killNow()
            let results = await fetched
            #expect(results.count == 16)
            #expect(results.allSatisfy { $0.result != nil }, "\(results.map { $0.operation.error as Any })")
        }
    }

    @Test("Eviction under a small maxmemory: evicted images just miss, and every fetch gets its bytes")
    func eviction() async throws {
        try await TierHarness.run(imageCount: 40, side: 256, maxMemoryBytes: 2 << 20) { harness in
            let writer = try harness.member("writer")
            for index in 0..<40 { _ = try await harness.fetch(index, with: writer) }
            let client = try harness.rawClient()
            // Write-throughs run after delivery: wait for the last one.
            _ = try await waitForValue(harness.key(39), in: client)
            guard case .bulkString(let info?) = try await client.send("INFO", ["stats"]) else {
                Issue.record("no INFO")
                return
            }
            let evicted = String(buffer: info).split(separator: "\r\n").first { $0.hasPrefix("evicted_keys:") }
                .flatMap { Int($0.dropFirst("evicted_keys:".count)) } ?? 0
            #expect(evicted > 0)
            let reader = try harness.member("reader")
            var sources: [ImageLoadSource] = []
            // Newest first: those are the ones LRU eviction kept (oldest first, each write-through would evict the
            // image read next).
            for index in (0..<40).reversed() { sources.append(try await harness.fetch(index, with: reader).source) }
            #expect(sources.contains(.network))
            #expect(sources.contains(.sharedCache))
            #expect(!reader.problems.all.contains { $0.kind == "sharedCacheValueRejected" }, "\(reader.problems.all)")
        }
    }
}
