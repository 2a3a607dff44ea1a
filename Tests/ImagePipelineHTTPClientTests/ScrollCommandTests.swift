import Foundation
import ImageOriginServer
import ImagePipelineKit
import Testing
import TestSupport

@Suite("sample-cli scroll", .enabled(if: SampleCLIBinary.path != nil, "sample-cli is not built next to the tests"))
struct ScrollCommandTests {
    @Test("A short back-and-forth run: every frame counted, images from the network then the caches, nothing heavy on the main queue, a JSON report")
    func shortRun() async throws {
        let report = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-scroll-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: report) }
        let snapshot = report.deletingPathExtension().appendingPathExtension("png")
        let timeline = report.deletingPathExtension().appendingPathExtension("svg")
        defer { try? FileManager.default.removeItem(at: snapshot); try? FileManager.default.removeItem(at: timeline) }
        let run = try await SampleCLIBinary.run(["scroll", "--feed", "small", "--seconds", "5", "--network", "loopback", "--quiet",
                                                 "--json-file", report.path, "--snapshot", snapshot.path,
                                                 "--timeline", timeline.path])
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        #expect(run.stdout.contains("decode/scale/disk on the main queue") && run.stdout.contains("none (checked)"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any])
        #expect(object["frames"] as? Int == 300 && object["mainQueueViolations"] as? Int == 0)
        let work = try #require(object["mainThreadWorkMsPerFrame"] as? [String: Double])
        let latency = try #require(object["frameLatencyMs"] as? [String: Double])
        #expect((work["p50"] ?? 0) > 0 && (work["p99"] ?? 0) >= (work["p50"] ?? 0) && (latency["p99"] ?? 0) > 0)
        let sources = try #require(object["finalImagesBySource"] as? [String: Int])
        // The first screens load from the network; scrolling back shows the same cells again from the caches.
        #expect((sources["network"] ?? 0) > 0, "\(sources)")
        #expect((sources["memory"] ?? 0) + (object["shownBeforeLoadReturned"] as? Int ?? 0) > 0, "\(sources)")
        #expect((object["requests"] as? Int ?? 0) > 0 && (object["bytesTransferred"] as? Int ?? 0) > 0)
        #expect((object["visibleCellsShowingImage"] as? Double ?? 0) > 0.5)
        // The snapshot is the viewport (3 columns × 4 rows of 128 px) as a PNG our decoder reads back.
        let picture = try CodecCatalogue.shared.decode(Data(contentsOf: snapshot))
        #expect(picture.properties.type == .png && picture.container.dimensions == PixelSize(width: 384, height: 512))
        let svg = try String(contentsOf: timeline, encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.contains("<polyline"))
    }

    @Test("--compare runs conventional loading, then the pipeline: only the conventional run decodes on the main queue")
    func compare() async throws {
        let report = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-compare-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: report) }
        let run = try await SampleCLIBinary.run(["scroll", "--feed", "small", "--compare", "--seconds", "3", "--network", "loopback", "--quiet",
                                                 "--json-file", report.path])
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        #expect(run.stdout.contains("conventional") && run.stdout.contains("pipeline"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: [String: Any]])
        #expect((object["conventional"]?["mainQueueViolations"] as? Int ?? 0) > 0)
        #expect(object["pipeline"]?["mainQueueViolations"] as? Int == 0)
        #expect((object["conventional"]?["finalImagesBySource"] as? [String: Int])?.keys.sorted() == ["network"])
        // Main-thread work counts the conventional run's decodes on the main queue: it is the heavier of the two.
        func mainThreadWork(_ run: String) -> Double {
            (object[run]?["mainThreadWorkMsPerFrame"] as? [String: Double])?["p99"] ?? -1
        }
        #expect(mainThreadWork("conventional") > mainThreadWork("pipeline") && mainThreadWork("pipeline") > 0)
    }

    @Test("--origin loads the cells from a list of URLs (here a server of the bundled images' directory)")
    func externalOrigin() async throws {
        let server = try await ImageOriginServer.start(port: 0, directory: CoordinatorHarness.imageURL.deletingLastPathComponent())
        let list = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-urls-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: list) }
        let names = ["skimage-rocket.jpg", "skimage-camera.png", "fire.gif"]
        try Data(("# bundled images\n" + names.map { server.url(for: "/\($0)").absoluteString }.joined(separator: "\n")).utf8).write(to: list)
        let run = try await SampleCLIBinary.run(["scroll", "--origin", list.path, "--seconds", "3", "--quiet"])
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        #expect(run.stdout.contains("unknown (external origin)") && run.stdout.contains("none (checked)"))
        // The cells cycle through the three URLs: those, and nothing else, were requested.
        #expect(Set(server.requestLog.map(\.path)) == Set(names.map { "/\($0)" }))
        let bad = try await SampleCLIBinary.run(["scroll", "--origin", "/nonexistent/list.txt", "--seconds", "1"])
        #expect(bad.status != 0 && bad.stderr.contains("cannot read"))
        try await server.shutdown()
    }

    @Test("Bad options are refused with a message, not a crash")
    func badOptions() async throws {
        let run = try await SampleCLIBinary.run(["scroll", "--fps", "50"])
        #expect(run.status != 0 && run.status != 1 && run.stderr.contains("--fps must be 60 or 120"))
    }
}
