import Foundation
import ImageOriginServer
import ImagePipelineKit
import Testing
import TestSupport

/// The bounds a hostile origin meets, shown on a real `sample-cli fetch` process: its peak memory is the
/// kernel's figure, not an estimate.
@Suite("A hostile origin against a real fetch process: bounded memory, no starved downloads", .serialized, .timeLimit(.minutes(3)))
struct HostileOriginProcessTests {
    static func withOrigin(_ body: (ImageOriginServer, URL) async throws -> Void) async throws {
        let server = try await ImageOriginServer.start(port: 0)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-hostile-\(UUID().uuidString)")
        var failure: (any Error)?
        do { try await body(server, root) } catch { failure = error }
        try await server.shutdown()
        try? FileManager.default.removeItem(at: root)
        if let failure { throw failure }
    }

    @Test("A partial left by one process and resumed by the next against a changed file: the new picture is stored, never a splice")
    func resumeOfChangedFileAcrossProcesses() async throws {
        try await Self.withOrigin { server, root in
            let original = Fixtures.rocketJPEG
            server.setAsset(original, at: "/a.jpg", contentType: "image/jpeg")
            server.stallNextResponse(to: "/a.jpg", afterBytes: 60_000, bytesPerSecond: 100_000)   // cancelled at 30 kB
            let url = server.url(for: "/a.jpg").absoluteString
            let common = ["--cache-dir", root.path, "--pipeline", "splice", "--json"]
            let first = try await SampleCLIBinary.run(["fetch", url, "--cancel-after-bytes", "30000"] + common)
            #expect(first.jsonLines.first?["state"] as? String == "cancelled", "\(first.stdout)")

            // The file changes on the server (same length, another picture, another ETag), and the server
            // ignores If-Range: the next process's resume is answered with a range of the new file.
            let changed = HostileOriginTests.paddedJPEG(Fixtures.image("skimage-astronaut-progressive.jpg"), to: original.count)
            let changedSize = try CodecCatalogue.shared.decode(changed).properties.dimensions
            server.setAsset(changed, at: "/a.jpg", contentType: "image/jpeg")
            server.setFaults([.ignoreIfRange], for: "/a.jpg")
            server.setShaping(nil, for: "/a.jpg")
            let second = try await SampleCLIBinary.run(["fetch", url] + common)
            let report = try #require(second.jsonLines.first, "\(second.stdout) \(second.stderr)")
            #expect(report["source"] as? String == "network")
            #expect(report["width"] as? Int == changedSize.width && report["height"] as? Int == changedSize.height)
            let requests = server.requests(to: "/a.jpg")
            #expect(requests.count == 3 && requests[1].range != nil && requests[2].range == nil)

            // A third process reads it from disk: the new picture, whole.
            let third = try await SampleCLIBinary.run(["fetch", url, "--sources", "disk"] + common)
            #expect(third.jsonLines.first?["width"] as? Int == changedSize.width, "\(third.stdout)")
            let inspected = try await SampleCLIBinary.run(["inspect", "splice", "--cache-dir", root.path, "--json"])
            #expect(inspected.jsonLines.map { $0["complete"] as? Bool } == [true])
        }
    }

    @Test("An endless body fails with responseTooLarge at the limit, and the process's memory stays bounded")
    func endlessBody() async throws {
        try await Self.withOrigin { server, root in
            server.setAsset(Fixtures.rocketJPEG, at: "/endless.jpg", contentType: "image/jpeg")
            server.setFaults([.endlessBody], for: "/endless.jpg")
            let limit = 16 << 20
            let (run, peak) = try await SampleCLIBinary.runMeasuringMemory([
                "fetch", server.url(for: "/endless.jpg").absoluteString, "--cache-dir", root.path, "--json",
                "--max-response-bytes", String(limit),
            ])
            let report = try #require(run.jsonLines.first, "no report: \(run.stdout)")
            #expect(run.status == 1)
            #expect(report["downloadError"] as? String == "responseTooLarge")
            #expect((report["bytes"] as? Int ?? .max) <= limit)
            // The body is held once by the download and once by the fetch, plus the runtime: far from the
            // gigabytes an unbounded read reaches within seconds.
            #expect(peak < 4 * limit + (128 << 20), "peak resident \(peak >> 20) MiB")
            #expect(try await eventually { server.requests(to: "/endless.jpg").first?.isComplete == true })
            #expect(server.requests(to: "/endless.jpg").first?.clientWentAway == true)
        }
    }

    @Test("Drip-fed downloads holding every download slot fail on the minimum rate, and the downloads queued behind them still run")
    func dripFeedDoesNotStarve() async throws {
        try await Self.withOrigin { server, root in
            // Eight drip-fed images for four download slots: whichever four start first hold every slot, and the
            // rest, the one normal image among them or not, run only once a slow one gives its slot up.
            let slow = (0..<8).map { "/drip\($0).jpg" }
            for path in slow {
                server.setAsset(Fixtures.rocketJPEG, at: path, contentType: "image/jpeg")
                server.setShaping(OriginShaping(bytesPerSecond: 300), for: path)
            }
            server.setAsset(Fixtures.rocketJPEG, at: "/normal.jpg", contentType: "image/jpeg")
            let urls = (slow + ["/normal.jpg"]).map { server.url(for: $0).absoluteString }
            let run = try await SampleCLIBinary.run(["fetch"] + urls + [
                "--cache-dir", root.path, "--json", "--min-rate", "2000", "--min-rate-window", "1",
            ])
            let reports = run.jsonLines
            #expect(reports.count == 9, "\(run.stdout) \(run.stderr)")
            for report in reports.prefix(8) {
                #expect(report["downloadError"] as? String == "transferTooSlow", "\(report)")
            }
            #expect(reports.last?["source"] as? String == "network")
            #expect(reports.last?["width"] as? Int != nil)
            // Every queued download was requested: none waited forever behind a drip-fed one.
            #expect(slow.allSatisfy { server.requests(to: $0).count == 1 })
        }
    }

    @Test("Twelve concurrent decodes of small files claiming 8000x8000 stay within the decode memory budget")
    func decodeMemoryBudget() async throws {
        try await Self.withOrigin { server, root in
            let side = 8000
            let paths = (0..<12).map { "/bomb\($0).jpg" }
            for (index, path) in paths.enumerated() {
                server.setAsset(try DecodeBomb.jpeg(side: side, variant: index), at: path, contentType: "image/jpeg")
            }
            let perDecode = Bitmap.alignedBytesPerRow(forWidth: side) * side
            let budget = perDecode + perDecode / 5           // room for one decode at a time
            let (run, peak) = try await SampleCLIBinary.runMeasuringMemory(["fetch"] + paths.map { server.url(for: $0).absoluteString } + [
                "--cache-dir", root.path, "--json", "--max-decode-memory", String(budget),
            ])
            let reports = run.jsonLines
            #expect(reports.count == 12, "\(run.stdout)")
            // Every fetch ends with an image or the budget's typed error, never anything else.
            for report in reports where report["width"] as? Int != side {
                #expect((report["error"] as? String)?.contains("more than the decodes in flight may hold together") == true, "\(report)")
            }
            #expect(reports.contains { $0["width"] as? Int == side })
            // Unbudgeted, the six decodes the operation queue runs at once held 1.4 GB. The budget bounds the
            // decodes; an image already handed to the fetch's delegate is the application's until it lets go (here
            // at once, but a loaded machine can have two in hand), and the runtime takes the rest.
            #expect(peak < budget + 2 * perDecode + (160 << 20), "peak resident \(peak >> 20) MiB, budget \(budget >> 20) MiB")
        }
    }
}
