import Foundation
import ImageOriginServer
import ImagePipelineKit
@testable import ImagePipelineRedis
import NIOCore
import Testing
import TestSupport

/// Waits until Redis holds a value under `key` (a write-through runs after delivery), or with `present` false
/// until it holds none (a rejected value is deleted in the background), at most 10 s. A look that times out (a
/// loaded machine can hold the server or the client's event loop up for a moment) counts as "not yet"; the
/// 10 s still bound the wait.
func waitForValue(_ key: SharedCacheKey, in client: RedisClient, present: Bool = true) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < deadline {
        do {
            if try await client.send("EXISTS", [key.rawValue]) == .integer(present ? 1 : 0) { return true }
        } catch RedisClientError.timedOut(_, _) {
            continue
        }
        try await Task.sleep(for: .milliseconds(20))
    }
    return false
}

@Suite("The fleet-shared tier on a real redis-server", .serialized,
       .enabled(if: LocalRedisServer.executablePath != nil, "redis-server is not installed"))
struct SharedCacheTierTests {
    @Test("An image one member downloaded is a shared-cache hit for another, then a disk hit there")
    func roundTrip() async throws {
        try await TierHarness.run { harness in
            let first = try harness.member("first")
            let fromOrigin = try await harness.fetch(0, with: first)
            #expect(fromOrigin.source == .network)
            #expect(try await waitForValue(harness.key(0), in: harness.rawClient()))
            // The written value carries the origin's validators with the bytes.
            guard case .hit(let written) = try await first.cache.value(for: harness.key(0)) else {
                Issue.record("no value written through")
                return
            }
            #expect(isSameBytes(written.data, harness.images[0]))
            #expect(written.eTag?.isEmpty == false && written.lastModified?.isEmpty == false)

            let second = try harness.member("second")
            let fromTier = try await harness.fetch(0, with: second)
            #expect(fromTier.source == .sharedCache)
            #expect(fromTier.originalDimensions == fromOrigin.originalDimensions)
            #expect(harness.originRequests(0) == 1)
            // Percolated into the member's own caches: memory now, and disk for its next process.
            #expect(try await harness.fetch(0, with: second).source == .memoryCache)
            let identifier = harness.url(0).absoluteString
            #expect(try await eventually {
                let onDisk = try? second.pipeline.withCopyOfDiskCacheFile(identifier: identifier) { try Data(contentsOf: $0) }
                return isSameBytes(onDisk, harness.images[0])
            })
            #expect(second.problems.all.isEmpty, "\(second.problems.all)")
        }
    }

    @Test("Two members fetching one image at once: one downloads under the lease, the other waits and gets it")
    func leaseContention() async throws {
        try await TierHarness.run { harness in
            harness.origin.setShaping(OriginShaping(firstByteLatency: .milliseconds(300)))
            let members = try (0..<4).map { try harness.member("member\($0)") }
            let results = try await withThrowingTaskGroup(of: FetchResult.self) { group in
                for member in members { group.addTask { try await harness.fetch(1, with: member) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(harness.originRequests(1) == 1)
            #expect(results.filter { $0.source == .network }.count == 1)
            #expect(results.filter { $0.source == .sharedCache }.count == 3)
        }
    }

    @Test("A stored image is written through, and clearing it deletes it from the tier")
    func storeAndClear() async throws {
        try await TierHarness.run { harness in
            let member = try harness.member("storer")
            let url = harness.url(2)
            let stored = await withCheckedContinuation { continuation in
                member.pipeline.store(StoreRequest(url: url, source: .data(harness.images[2]))) { _, didStore, _ in
                    continuation.resume(returning: didStore)
                }
            }
            #expect(stored)
            let client = try harness.rawClient()
            #expect(try await waitForValue(harness.key(2), in: client))
            let reader = try harness.member("reader")
            #expect(try await harness.fetch(2, with: reader).source == .sharedCache)
            #expect(harness.originRequests(2) == 0)

            member.pipeline.clearImage(identifier: url.absoluteString)
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline, try await client.send("EXISTS", [harness.key(2).rawValue]) == .integer(1) {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(try await client.send("EXISTS", [harness.key(2).rawValue]) == .integer(0))
        }
    }

    @Test("Corrupt, truncated, unsigned and foreign values are rejected, deleted and fetched again",
          arguments: ["corrupt", "truncated", "unsigned", "foreign"])
    func badValues(kind: String) async throws {
        try await TierHarness.run { harness in
            let client = try harness.rawClient()
            // A good value of image 3, written by a member, is the material for every bad one.
            let writer = try harness.member("writer", secret: kind == "unsigned" ? nil : TierHarness.fleetSecret)
            _ = try await harness.fetch(3, with: writer)
            #expect(try await waitForValue(harness.key(3), in: client))
            guard case .bulkString(var good?) = try await client.send("GET", [harness.key(3).rawValue]) else {
                Issue.record("no value")
                return
            }
            var target = harness.key(3)
            var planted = good
            switch kind {
            case "corrupt":
                let last = good.writerIndex - 1
                planted.setInteger(good.getInteger(at: last, as: UInt8.self)! ^ 0xFF, at: last)
            case "truncated":
                planted = good.readSlice(length: good.readableBytes - 100)!
            case "foreign":
                // A good value moved under another image's key.
                target = harness.key(0)
            default:
                break  // "unsigned": the writer had no secret
            }
            _ = try await client.send("SET", bytes: [ByteBuffer(string: target.rawValue), planted])
            let plantedBytes = try await client.send("STRLEN", [target.rawValue])
            #expect(plantedBytes == .integer(Int64(planted.readableBytes)))

            let index = kind == "foreign" ? 0 : 3
            let reader = try harness.member("reader")
            let before = harness.originRequests(index)
            let result = try await harness.fetch(index, with: reader)
            #expect(result.source == .network)
            #expect(harness.originRequests(index) == before + 1)
            // Once, or twice when the look after taking the lease came before the background delete.
            #expect(reader.cache.rejectedValueCount >= 1)
            #expect(reader.problems.all.contains { $0.kind == "sharedCacheValueRejected" }, "\(reader.problems.all)")
            // The reader's download replaced the bad value with a good one.
            #expect(try await waitForValue(target, in: client))
            let again = try harness.member("again")
            #expect(try await harness.fetch(index, with: again).source == .sharedCache)
        }
    }

    @Test("The background delete of a rejected value leaves a good value written meanwhile")
    func rejectedValueDeleteSparesNewerValue() async throws {
        try await TierHarness.run { harness in
            let client = try harness.rawClient()
            let member = try harness.member("member")
            let key = harness.key(1)
            let rejected = ByteBuffer(string: "not a shared-cache value")
            _ = try await client.send("SET", bytes: [ByteBuffer(string: key.rawValue), rejected])
            guard case .rejected = try await member.cache.value(for: key) else {
                Issue.record("the planted value was not rejected")
                return
            }
            // Wait for the background delete, so that it cannot come after the good value below.
            #expect(try await waitForValue(key, in: client, present: false))

            // The delete that would have come late: the key now holds another process's good value.
            _ = try await harness.fetch(1, with: member)
            #expect(try await waitForValue(key, in: client))
            let late = try await member.cache.deleteRejectedValue(for: key, sha1Hex: RedisImageCache.sha1Hex(rejected))
            #expect(!late)
            guard case .hit = try await member.cache.value(for: key) else {
                Issue.record("the good value was deleted")
                return
            }

            // The same delete while the rejected value is still there removes it.
            _ = try await client.send("SET", bytes: [ByteBuffer(string: key.rawValue), rejected])
            #expect(try await member.cache.deleteRejectedValue(for: key, sha1Hex: RedisImageCache.sha1Hex(rejected)))
            #expect(try await client.send("EXISTS", [key.rawValue]) == .integer(0))
        }
    }
}
