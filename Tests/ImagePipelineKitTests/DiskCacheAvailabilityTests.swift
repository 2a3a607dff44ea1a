import Foundation
import Testing
import TestSupport
@testable import ImagePipelineKit

/// A disk cache that cannot be opened is a reported problem, a pipeline that goes on without it and opens it
/// later, and an `inspect` that says so instead of listing nothing.
@Suite("Disk cache availability: an index that cannot be opened is reported, retried, and never looks empty")
struct DiskCacheAvailabilityTests {
    /// A cache root whose pipeline `name` has a file that is not a database where its index belongs.
    static func unreadableIndexRoot(pipeline name: String) throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-unavailable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root.appendingPathComponent(name), withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: 8192).write(to: root.appendingPathComponent("\(name)/%index.sqlite"))
        return root
    }

    @Test("An index that cannot be opened is a named problem; the pipeline opens its cache once the index is readable again")
    func reportedAndRetried() throws {
        let name = "unavailable-" + UUID().uuidString.prefix(8)
        let root = try Self.unreadableIndexRoot(pipeline: name)
        defer { try? FileManager.default.removeItem(at: root) }
        let configuration = GlobalConfiguration()
        let problems = ProblemLog()
        configuration.problemObserver = problems
        let pipeline = try ImagePipeline(identifier: name, configuration: configuration, cacheRoot: root)
        #expect(pipeline.diskCache == nil)
        let reason = try #require(pipeline.diskCacheUnavailability)
        #expect(problems.all.contains(.diskCacheUnavailable(pipeline: name, error: reason)))

        // Not retried before its time; retried after it, successfully once the file is gone.
        try FileManager.default.removeItem(at: root.appendingPathComponent("\(name)/%index.sqlite"))
        #expect(pipeline.caches.diskOpener.cache(at: .now) == nil)
        #expect(pipeline.caches.diskOpener.cache(at: .now + DiskCacheOpener.retryInterval + .seconds(1)) != nil)
        #expect(pipeline.diskCache != nil && pipeline.diskCacheUnavailability == nil)
        #expect(problems.all.filter { $0.kind == "diskCacheUnavailable" }.count == 1)
    }

    @Test("inspect exits non-zero with the reason when a pipeline's index cannot be opened")
    func inspectFails() async throws {
        let root = try Self.unreadableIndexRoot(pipeline: "p")
        defer { try? FileManager.default.removeItem(at: root) }
        let named = try await SampleCLIBinary.run(["inspect", "p", "--cache-dir", root.path])
        #expect(named.status == 1)
        #expect(named.stderr.contains("p: disk cache unavailable: disk cache index"), "\(named.stderr)")
        #expect(!named.stdout.contains("0 complete"))
        let all = try await SampleCLIBinary.run(["inspect", "--cache-dir", root.path, "--json"])
        #expect(all.status == 1 && all.stdout.isEmpty)
    }

    @Test("inspect escapes control characters in identifiers and URLs: a CR or LF cannot forge a row")
    func inspectEscapes() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-escape-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        var name = ""
        do {
            let pipeline = try ImagePipeline(identifier: "escape-" + UUID().uuidString.prefix(8), configuration: GlobalConfiguration(),
                                             cacheRoot: root)
            name = pipeline.identifier
            let image = CachedImageData(data: Data(repeating: 7, count: 100), url: URL(string: "http://t/a.jpg")!,
                                        dimensions: PixelSize(width: 1, height: 1))
            #expect(pipeline.diskCache?.storeComplete(image, identifier: "a\r\n  forged  1x1  1 bytes  complete\u{1B}[2J") == true)
        }
        let run = try await SampleCLIBinary.run(["inspect", name, "--cache-dir", root.path])
        #expect(run.status == 0)
        let lines = run.stdout.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.isEmpty }
        #expect(lines.count == 2, "\(run.stdout)")
        #expect(run.stdout.contains("a\\r\\n  forged  1x1  1 bytes  complete\\u{1B}[2J"))
        #expect(!run.stdout.contains("\u{1B}") && !run.stdout.contains("\r"))
    }
}
