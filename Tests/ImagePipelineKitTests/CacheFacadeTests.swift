import Foundation
import Testing

/// The library's sources, checked for the one rule `docs/architecture.md` gives a `grep` for: outside
/// `PipelineCaches`, only `ImagePipeline`'s public accessors name a cache tier.
@Suite("The cache façade is the only door to the tiers")
struct CacheFacadeTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/ImagePipelineKit")

    @Test("No source file but the façade reads a tier, except the four public accessors")
    func onlyTheFacadeNamesATier() throws {
        let tier = try Regex(#"caches\.(rendered|memory|disk|diskOpener|renditionTables)\b|\w\.(renderedCache|memoryCache|diskCache)\b"#)
        let accessor = try Regex(#"public var (renderedCache|memoryCache|diskCache|renditionTables):"#)
        var found: [String] = []
        var accessors = 0
        let files = try #require(FileManager.default.enumerator(at: Self.sources, includingPropertiesForKeys: nil))
        for case let file as URL in files where file.pathExtension == "swift" && file.lastPathComponent != "PipelineCaches.swift" {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            for (number, line) in lines.enumerated()
            where !line.trimmingCharacters(in: .whitespaces).hasPrefix("///") && line.contains(tier) {
                let isAccessor = file.lastPathComponent == "ImagePipeline.swift"
                    && line.contains(accessor)
                if isAccessor { accessors += 1 } else { found.append("\(file.lastPathComponent):\(number + 1): \(line)") }
            }
        }
        #expect(found.isEmpty, "tiers named outside the façade: \(found)")
        #expect(accessors == 4, "the public accessors renderedCache, memoryCache, diskCache and renditionTables")
    }
}
