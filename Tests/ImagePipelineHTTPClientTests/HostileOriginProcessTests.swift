import Foundation
import ImageOriginServer
import ImagePipelineKit
import Testing
import TestSupport

/// The bounds a hostile origin meets, shown on a real `sample-cli fetch` process: its peak memory is the
/// kernel's figure, not an estimate.
@Suite("A hostile origin against a real fetch process: bounded memory, no starved downloads", .serialized)
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

    @Test("Four drip-fed downloads holding every download slot fail on the minimum rate, and a fifth image still arrives")
    func dripFeedDoesNotStarve() async throws {
        try await Self.withOrigin { server, root in
            let slow = (0..<4).map { "/drip\($0).jpg" }
            for path in slow {
                server.setAsset(Fixtures.rocketJPEG, at: path, contentType: "image/jpeg")
                server.setShaping(OriginShaping(bytesPerSecond: 200), for: path)
            }
            server.setAsset(Fixtures.rocketJPEG, at: "/fifth.jpg", contentType: "image/jpeg")
            // Four downloads run at once by default: the four slow ones go first and take every slot.
            let urls = (slow + ["/fifth.jpg"]).map { server.url(for: $0).absoluteString }
            let run = try await SampleCLIBinary.run(["fetch"] + urls + [
                "--cache-dir", root.path, "--json", "--min-rate", "2000", "--min-rate-window", "1",
            ])
            let reports = run.jsonLines
            #expect(reports.count == 5, "\(run.stdout) \(run.stderr)")
            for report in reports.prefix(4) {
                #expect(report["downloadError"] as? String == "transferTooSlow", "\(report)")
            }
            #expect(reports.last?["source"] as? String == "network")
            #expect(reports.last?["width"] as? Int != nil)
            // The fifth was requested only once a slow one gave up its slot.
            let fifth = try #require(server.requests(to: "/fifth.jpg").first)
            #expect(slow.allSatisfy { path in server.requests(to: path).first.map { $0.receivedAt <= fifth.receivedAt } ?? false })
        }
    }

    /// A small real JPEG whose frame header claims `side` × `side`: a few kilobytes that a decoder must
    /// allocate `side² × 4` bytes for. `variant` bytes after its end make each copy different.
    static func decodeBomb(side: Int, variant: Int) throws -> Data {
        let pixels = try Bitmap(width: 16, height: 16) { pixels, bytesPerRow in memset(pixels, 0x80, bytesPerRow * 16) }
        var jpeg = try CodecCatalogue.shared.encode(ImageContainer(bitmap: pixels), as: .jpeg, quality: 0.8)
        let marker = try #require(jpeg.firstRange(of: Data([0xFF, 0xC0])))
        // Frame header: FF C0, length (2), precision (1), height (2), width (2).
        let height = marker.lowerBound + 5
        jpeg.replaceSubrange(height..<(height + 4), with: [UInt8(side >> 8), UInt8(side & 0xFF), UInt8(side >> 8), UInt8(side & 0xFF)])
        return jpeg + Data(repeating: UInt8(truncatingIfNeeded: variant), count: variant + 1)
    }

    @Test("Twelve concurrent decodes of small files claiming 8000x8000 stay within the decode memory budget")
    func decodeMemoryBudget() async throws {
        try await Self.withOrigin { server, root in
            let side = 8000
            let paths = (0..<12).map { "/bomb\($0).jpg" }
            for (index, path) in paths.enumerated() {
                server.setAsset(try Self.decodeBomb(side: side, variant: index), at: path, contentType: "image/jpeg")
            }
            let perDecode = Bitmap.alignedBytesPerRow(forWidth: side) * side
            let budget = 2 * perDecode + perDecode / 2       // room for two decodes at a time
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
            // Unbudgeted, the six decodes the operation queue runs at once hold about 1.4 GB; within the budget
            // the process stays under it plus the runtime.
            #expect(peak < budget + (160 << 20), "peak resident \(peak >> 20) MiB, budget \(budget >> 20) MiB")
        }
    }
}
