import Foundation
import Testing
@testable import ImagePipelineKit

@Suite("Pipelines: identifiers, one live pipeline per identifier, shared cache totals")
struct ImagePipelineTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-pipelines-\(UUID().uuidString)")

    @Test("Scenario 1: valid and invalid identifiers; one live pipeline per identifier; release frees it")
    func identifiers() throws {
        let configuration = GlobalConfiguration()
        // Identifiers are process-wide: make them unique to this test run.
        let suffix = String(UUID().uuidString.prefix(8))
        var first: ImagePipeline? = try ImagePipeline(identifier: "a.b_c-1" + suffix, configuration: configuration, cacheRoot: root)
        for bad in ["a b", "", "..", "x/y", "é"] {
            #expect(throws: ImagePipelineError.invalidIdentifier(bad)) {
                try ImagePipeline(identifier: bad, configuration: configuration, cacheRoot: root)
            }
        }
        #expect(throws: ImagePipelineError.identifierInUse("a.b_c-1" + suffix)) {
            try ImagePipeline(identifier: "a.b_c-1" + suffix, configuration: configuration, cacheRoot: root)
        }
        #expect(first?.diskCache != nil)
        first = nil
        #expect(throws: Never.self) { try ImagePipeline(identifier: "a.b_c-1" + suffix, configuration: configuration, cacheRoot: root) }
    }

    @Test("Known identifiers include pipelines that are not loaded; caches share the configuration's totals")
    func knownIdentifiers() throws {
        let configuration = GlobalConfiguration()
        let suffix = String(UUID().uuidString.prefix(8))
        var pipeline: ImagePipeline? = try ImagePipeline(identifier: "known" + suffix, configuration: configuration, cacheRoot: root)
        pipeline?.memoryCache.storeComplete(
            CachedImageData(data: Data(count: 10), url: URL(string: "http://t/a")!, dimensions: PixelSize(width: 1, height: 1)),
            identifier: "I")
        #expect(configuration.totalBytesForAllMemoryCaches == 10)
        pipeline = nil
        #expect(configuration.totalBytesForAllMemoryCaches == 0)
        #expect(ImagePipeline.knownIdentifiers(cacheRoot: root) == ["known" + suffix])
    }

    @Test("The operation queue is as wide as the download limit plus one decoding fetch per core, and follows both")
    func operationQueueWidth() {
        let configuration = GlobalConfiguration()
        let cores = ProcessInfo.processInfo.activeProcessorCount
        #expect(configuration.maxConcurrentImageDecodeCount == cores)
        #expect(configuration.operationQueue.maxConcurrentOperationCount == 4 + cores)
        configuration.maxConcurrentImagePipelineDownloadCount = 8
        #expect(configuration.operationQueue.maxConcurrentOperationCount == 8 + cores)
        configuration.maxConcurrentImageDecodeCount = 3
        #expect(configuration.operationQueue.maxConcurrentOperationCount == 11)
        configuration.maxConcurrentImageDecodeCount = 0   // resets to the default
        #expect(configuration.maxConcurrentImageDecodeCount == cores)
        configuration.maxConcurrentImagePipelineDownloadCount = -1   // unlimited downloads: an unlimited queue
        #expect(configuration.operationQueue.maxConcurrentOperationCount == OperationQueue.defaultMaxConcurrentOperationCount)
    }
}
