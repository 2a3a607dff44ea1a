import Foundation
import ImageOriginServer
import ImagePipelineKit
import Testing
import TestSupport

@Suite("sample-cli fetch and inspect against the loopback origin",
       .enabled(if: SampleCLIBinary.path != nil, "sample-cli is not built next to the tests"))
struct FetchCommandTests {
    @Test("Cancel after N bytes, resume on the next run with only the rest transferred, then a disk hit; inspect shows each step",
          arguments: ["urlsession", "httpclient"])
    func cancelResumeThenDisk(network: String) async throws {
        let server = try await ImageOriginServer.start(port: 0)
        let image = try Data(contentsOf: CoordinatorHarness.imageURL)
        server.setAsset(image, at: "/a.jpg", contentType: "image/jpeg")
        server.stallNextResponse(to: "/a.jpg", afterBytes: 60_000, bytesPerSecond: 100_000)   // cancelled at 30 kB
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-cli-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let url = server.url(for: "/a.jpg").absoluteString
        let common = ["--cache-dir", cache, "--pipeline", "cli", "--network", network, "--json"]

        let first = try await SampleCLIBinary.run(["fetch", url, "--cancel-after-bytes", "30000"] + common)
        #expect(first.status == 1, "\(first.stdout) \(first.stderr)")
        let cancelled = try #require(first.jsonLines.first)
        #expect(cancelled["state"] as? String == "cancelled" && cancelled["errorCode"] as? Int == -1)
        let kept = try #require(cancelled["bytes"] as? Int)
        #expect(kept >= 30000 && kept < image.count)

        let partial = try await SampleCLIBinary.run(["inspect", "cli", "--cache-dir", cache, "--json"])
        let partialRow = try #require(partial.jsonLines.first, "\(partial.stdout) \(partial.stderr)")
        #expect(partialRow["complete"] as? Bool == false && partialRow["url"] as? String == url)

        let second = try await SampleCLIBinary.run(["fetch", url] + common)
        #expect(second.status == 0, "\(second.stdout) \(second.stderr)")
        let resumed = try #require(second.jsonLines.first)
        #expect(resumed["source"] as? String == "networkResumed" && resumed["resumed"] as? Bool == true)
        #expect(resumed["bytes"] as? Int == image.count)
        try await server.waitForCompletedRequests(count: 2)
        let log = server.requestLog
        #expect(log.count == 2)
        // The second request asked for the rest only and got it; the server sent no more than that.
        let partialBytes = try #require(log.last?.range.flatMap { Int($0.dropFirst("bytes=".count).dropLast()) })
        #expect(partialBytes > 0 && log.last?.status == 206 && log.last?.bytesSent == image.count - partialBytes)

        let third = try await SampleCLIBinary.run(["fetch", url] + common)
        let fromDisk = try #require(third.jsonLines.first)
        #expect(fromDisk["source"] as? String == "disk" && fromDisk["bytes"] as? Int == 0)
        #expect((fromDisk["width"] as? Int ?? 0) > 0)
        #expect(server.requestLog.count == 2)

        let complete = try await SampleCLIBinary.run(["inspect", "--cache-dir", cache, "--json"])
        let rows = complete.jsonLines
        #expect(rows.count == 1 && rows.first?["complete"] as? Bool == true && rows.first?["bytes"] as? Int == image.count)
        try await server.shutdown()
    }

    @Test("--freshness http revalidates a no-cache image on the next run: a 304, source diskRevalidated; the default ttl run reads the disk without a request",
          arguments: ["urlsession", "httpclient"])
    func freshnessHTTP(network: String) async throws {
        let server = try await ImageOriginServer.start(port: 0)
        let image = try Data(contentsOf: CoordinatorHarness.imageURL)
        server.setAsset(image, at: "/a.jpg", contentType: "image/jpeg", cacheControl: "no-cache")
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-cli-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let url = server.url(for: "/a.jpg").absoluteString
        let common = ["--cache-dir", cache, "--pipeline", "cli", "--network", network, "--json"]

        let first = try await SampleCLIBinary.run(["fetch", url, "--freshness", "http"] + common)
        #expect(first.jsonLines.first?["source"] as? String == "network", "\(first.stdout) \(first.stderr)")
        let second = try await SampleCLIBinary.run(["fetch", url, "--freshness", "http"] + common)
        #expect(second.status == 0, "\(second.stdout) \(second.stderr)")
        let revalidated = try #require(second.jsonLines.first)
        #expect(revalidated["source"] as? String == "diskRevalidated" && revalidated["bytes"] as? Int == 0)
        #expect((revalidated["width"] as? Int ?? 0) > 0)
        try await server.waitForCompletedRequests(count: 2)
        #expect(server.requestLog.map(\.status) == [200, 304])

        let third = try await SampleCLIBinary.run(["fetch", url] + common)
        #expect(third.jsonLines.first?["source"] as? String == "disk")
        #expect(server.requestLog.count == 2)
        try await server.shutdown()
    }

    @Test("--progressive counts the scans of a progressive JPEG; without it there are none")
    func progressiveScans() async throws {
        let server = try await ImageOriginServer.start(port: 0)
        let image = try Data(contentsOf: ProgressiveTests.images.appendingPathComponent("skimage-astronaut-progressive.jpg"))
        server.setAsset(image, at: "/p.jpg", contentType: "image/jpeg")
        server.setShaping(OriginShaping(bytesPerSecond: 30_000))
        // Paused halfway: the scans of the first half show even if the client reads the rest in one go.
        server.setFaults([.pauseAfterBytes(image.count / 2, for: .milliseconds(500))], for: "/p.jpg")
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-cli-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let url = server.url(for: "/p.jpg").absoluteString
        let scanned = try await SampleCLIBinary.run(["fetch", url, "--cache-dir", cache, "--progressive", "--json",
                                                      "--sources", "network"])
        #expect((scanned.jsonLines.first?["progressiveScans"] as? Int ?? 0) > 0, "\(scanned.stdout) \(scanned.stderr)")
        let plain = try await SampleCLIBinary.run(["fetch", url, "--cache-dir", cache, "--json", "--sources", "network"])
        #expect(plain.jsonLines.first?["progressiveScans"] as? Int == 0 && plain.jsonLines.first?["preview"] is NSNull)
        try await server.shutdown()
    }

    @Test("A bad URL list and a missing image: exit 1 with a typed error per URL, the good one still fetched")
    func failures() async throws {
        let server = try await ImageOriginServer.start(port: 0)
        server.setAsset(try Data(contentsOf: CoordinatorHarness.imageURL), at: "/a.jpg", contentType: "image/jpeg")
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-cli-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let run = try await SampleCLIBinary.run([
            "fetch", server.url(for: "/a.jpg").absoluteString, server.url(for: "/missing.jpg").absoluteString,
            "--cache-dir", cache, "--json", "--target", "64x64",
        ])
        #expect(run.status == 1)
        let rows = run.jsonLines
        #expect(rows.count == 2)
        #expect(rows.first?["source"] as? String == "network" && rows.first?["width"] as? Int ?? 0 <= 64)
        #expect(rows.last?["state"] as? String == "failed" && rows.last?["errorCode"] is Int)
        let usage = try await SampleCLIBinary.run(["fetch", "not a url", "--cache-dir", cache])
        #expect(usage.status != 0 && usage.status != 1 && usage.stderr.contains("not an absolute URL"))
        try await server.shutdown()
    }

    @Test("A store the disk refuses is a warning on stderr, and the image is still delivered")
    func refusedStoreWarns() async throws {
        let server = try await ImageOriginServer.start(port: 0)
        let large = Fixtures.hubbleJPEG
        server.setAsset(Fixtures.rocketJPEG, at: "/small.jpg", contentType: "image/jpeg")
        server.setAsset(large, at: "/large.jpg", contentType: "image/jpeg")
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-cli-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: cache) }
        // No file may pass 256 KiB: the small image is stored, the 528 KB one is refused as by a full disk.
        let run = try await SampleCLIBinary.run(
            ["fetch", server.url(for: "/small.jpg").absoluteString, server.url(for: "/large.jpg").absoluteString,
             "--cache-dir", cache, "--pipeline", "cli", "--json"], fileSizeLimitKiB: 256)
        try await server.shutdown()
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        #expect(run.jsonLines.map { $0["source"] as? String } == ["network", "network"])
        let warnings = run.stderr.split(separator: "\n").filter { $0.hasPrefix("warning: diskCacheWriteFailed: ") }
        #expect(warnings.count == 1 && warnings.first?.contains("/large.jpg") == true, "\(run.stderr)")
        let inspected = try await SampleCLIBinary.run(["inspect", "cli", "--cache-dir", cache, "--json"])
        #expect(inspected.jsonLines.compactMap { $0["url"] as? String }.map { $0.hasSuffix("/small.jpg") } == [true])
    }
}
