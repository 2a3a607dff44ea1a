import Foundation
import ImageOriginServer
import ImagePipelineKit
import Testing
import TestSupport

@Suite("Several processes on one cache directory",
       .enabled(if: SampleCLIBinary.path != nil, "sample-cli is not built next to the tests"))
struct SharedCacheDirectoryTests {
    /// Distinct small JPEGs: a flat colour each, so every URL has its own bytes.
    private static func images(count: Int) throws -> [Data] {
        try (0..<count).map { index in
            let bitmap = try Bitmap(width: 48, height: 32) { pixels, bytesPerRow in
                for row in 0..<32 {
                    let line = pixels.advanced(by: row * bytesPerRow).assumingMemoryBound(to: UInt8.self)
                    for column in 0..<48 {
                        line[column * 4] = UInt8(index % 256)
                        line[column * 4 + 1] = UInt8((index * 7) % 256)
                        line[column * 4 + 2] = UInt8(row * 8)
                        line[column * 4 + 3] = 255
                    }
                }
            }
            return try CodecCatalogue.shared.encode(ImageContainer(bitmap: bitmap), as: .jpeg, quality: 0.8)
        }
    }

    @Test("Four processes store 100 overlapping images each: a fifth reads every image back from disk")
    func fourWritersOneReader() async throws {
        let server = try await ImageOriginServer.start(port: 0)
        let images = try Self.images(count: 160)
        for (index, image) in images.enumerated() {
            server.setAsset(image, at: "/\(index).jpg", contentType: "image/jpeg")
        }
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-shared-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let urls = images.indices.map { server.url(for: "/\($0).jpg").absoluteString }
        let common = ["--cache-dir", cache, "--pipeline", "shared", "--network", "httpclient", "--json"]

        // Process k fetches images 20k ..< 20k + 100: neighbours overlap by 80, so most images are written by
        // several processes at once.
        let runs = try await withThrowingTaskGroup(of: SampleCLIBinary.Run.self) { group in
            for process in 0..<4 {
                let mine = Array(urls[(process * 20)..<(process * 20 + 100)]).shuffled()
                group.addTask { try await SampleCLIBinary.run(["fetch"] + mine + common) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for run in runs {
            #expect(run.status == 0, "\(run.stderr.suffix(2000))")
            #expect(run.jsonLines.count == 100)
        }

        let reader = try await SampleCLIBinary.run(["fetch"] + urls + common + ["--sources", "disk"])
        #expect(reader.status == 0, "\(reader.stderr.suffix(2000))")
        let sources = reader.jsonLines.map { $0["source"] as? String ?? "failed" }
        #expect(sources.count == urls.count)
        #expect(sources.allSatisfy { $0 == "disk" }, "\(Dictionary(grouping: sources, by: { $0 }).mapValues(\.count))")

        let inspected = try await SampleCLIBinary.run(["inspect", "shared", "--cache-dir", cache, "--json"])
        let rows = inspected.jsonLines
        #expect(rows.count == urls.count)
        #expect(rows.allSatisfy { $0["complete"] as? Bool == true })
        let bytes = Dictionary(uniqueKeysWithValues: rows.compactMap { row -> (String, Int)? in
            guard let url = row["url"] as? String, let count = row["bytes"] as? Int else { return nil }
            return (url, count)
        })
        #expect(urls.enumerated().allSatisfy { bytes[$0.element] == images[$0.offset].count })
        try await server.shutdown()
    }
}
