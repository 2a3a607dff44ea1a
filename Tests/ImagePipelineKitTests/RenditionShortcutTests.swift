import Foundation
import Testing
import PipelineLocking
import TestSupport
@testable import ImagePipelineKit

/// A fetch that read a cached image, or owned a download, while another fetch of the image kept its rendition
/// takes the rendition instead of decoding the bytes again. The bytes here are not an image at all: a fetch that
/// decoded them would fail, so the outcome says which way it went.
@Suite("A rendition kept while a fetch read the disk or downloaded spares it the decode")
struct RenditionShortcutTests {
    let configuration = GlobalConfiguration()
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-shortcut-\(UUID().uuidString)")
    let url = URL(string: "http://t/a.jpg")!
    let target = PixelSize(width: 8, height: 8)
    /// A JPEG's magic numbers, then nothing a decoder accepts: only a rendition can make an image of them.
    let jpegThenJunk = Data([0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 0x5A, count: 300))

    /// A pipeline holding undecodable bytes on disk for "I", and a rendition of "I" at the target.
    func pipeline() throws -> ImagePipeline {
        let pipeline = try ImagePipeline(identifier: "shortcut" + String(UUID().uuidString.prefix(8)),
                                         configuration: configuration, cacheRoot: root)
        pipeline.diskCache?.storeComplete(CachedImageData(data: Data(repeating: 0x5A, count: 300), url: url, dimensions: target),
                                          identifier: "I")
        let bitmap = try Bitmap(width: target.width, height: target.height) { _, _ in }
        pipeline.renderedCache.store(RenderedImage(image: ImageContainer(bitmap: bitmap), sourceDimensions: target, url: url),
                                     identifier: "I")
        return pipeline
    }

    /// Delivers the disk entry of "I" to a new fetch of `sources`, as its disk step does, and says whether the
    /// fetch went on to its next source (the bytes were decoded, and failed).
    func deliverFromDisk(_ pipeline: ImagePipeline, sources: LoadingSources) async throws -> (FetchOperation, wentOn: Bool) {
        let request = GenericFetchRequest(url: url, identifier: "I", targetSizing: TargetSizing(dimensions: target),
                                          loadingSources: sources)
        let operation = pipeline.operation(with: request, delegate: nil)
        let cached = try #require(pipeline.caches.entry(in: .disk, identifier: "I")?.complete)
        let wentOn = Locked(false)
        operation.queue.sync {
            operation._queue_deliverCached(cached, from: .disk) { wentOn.withLock { $0 = true } }
        }
        _ = try await eventually { operation.isFinished || wentOn.withLock { $0 } }
        return (operation, wentOn.withLock { $0 })
    }

    @Test("A fetch that may read memory takes the rendition: no decode, the disk entry kept")
    func takesRendition() async throws {
        let pipeline = try pipeline()
        defer { try? FileManager.default.removeItem(at: root) }
        let (operation, wentOn) = try await deliverFromDisk(pipeline, sources: .all)
        #expect(!wentOn)
        #expect(operation.finalResult?.image.dimensions == target)
        #expect(pipeline.caches.entry(in: .disk, identifier: "I")?.complete != nil)
    }

    @Test("A fetch that may not read memory decodes what it read from disk")
    func diskOnlyDecodes() async throws {
        let pipeline = try pipeline()
        defer { try? FileManager.default.removeItem(at: root) }
        let (operation, wentOn) = try await deliverFromDisk(pipeline, sources: [.diskCache])
        #expect(wentOn)
        #expect(operation.finalResult == nil)
        #expect(pipeline.caches.entry(in: .disk, identifier: "I")?.complete == nil)
    }

    /// Ends the download of "I" for a new fetch that owned it, with `bytes`, and waits for the fetch to finish.
    func finishOwnedDownload(_ pipeline: ImagePipeline, bytes: Data, sources: LoadingSources = .all) async throws -> FetchOperation {
        let request = GenericFetchRequest(url: url, identifier: "I", targetSizing: TargetSizing(dimensions: target),
                                          loadingSources: sources)
        let operation = pipeline.operation(with: request, delegate: nil)
        let response = DownloadResponse(statusCode: 200, headers: DownloadHeaders(), url: url, expectedContentLength: bytes.count)
        operation.queue.sync {
            operation._queue_networkDidFinish(.success(DownloadResult(data: bytes, response: response, wasResumed: false,
                                                                      isOwner: true, unnecessaryError: nil)))
        }
        _ = try await eventually { operation.isFinished }
        return operation
    }

    @Test("The fetch that owned a download, told of its end after another fetch of it decoded the bytes, stores them from that rendition")
    func ownerTakesRendition() async throws {
        let pipeline = try pipeline()
        defer { try? FileManager.default.removeItem(at: root) }
        let operation = try await finishOwnedDownload(pipeline, bytes: jpegThenJunk)
        #expect(operation.error == nil)
        #expect(operation.finalResult?.image.dimensions == target)
        #expect(operation.finalResult?.source == .network)
        #expect(pipeline.caches.entry(in: .memory, identifier: "I")?.complete?.data == jpegThenJunk)
    }

    @Test("An owner that may not read memory, or whose bytes have no known format, decodes them")
    func ownerDecodesWithoutShortcut() async throws {
        let pipeline = try pipeline()
        defer { try? FileManager.default.removeItem(at: root) }
        for operation in [try await finishOwnedDownload(pipeline, bytes: jpegThenJunk, sources: [.network]),
                          try await finishOwnedDownload(pipeline, bytes: Data(repeating: 0x5A, count: 300))] {
            #expect(operation.finalResult == nil)
            #expect(operation.error?.code == .couldNotDecodeImage)
        }
    }
}
