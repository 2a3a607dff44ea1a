import Foundation
import Logging
import Testing
import TestSupport
@testable import ImagePipelineKit

/// Records what observers hear.
final class StoreRecorder: ImagePipelineObserver, Sendable {
    let stored = Recorded<StoredImageInfo>()
    func imagePipeline(_ pipeline: ImagePipeline, didStore image: StoredImageInfo) {
        stored.append(image)
    }
}

@Suite("Observers, the store notification, logging and global inspection")
struct ObserverAndLoggingTests {
    let configuration: GlobalConfiguration = {
        let configuration = GlobalConfiguration()
        configuration.delegateQueue = DispatchQueue(label: "observer-tests.delegate")
        return configuration
    }()
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-observe-\(UUID().uuidString)")
    let prefix = "obs" + String(UUID().uuidString.prefix(6))

    func pipeline(_ suffix: String) throws -> ImagePipeline {
        try ImagePipeline(identifier: prefix + suffix, configuration: configuration, cacheRoot: root)
    }

    func store(_ request: StoreRequest, in pipeline: ImagePipeline) async {
        await withCheckedContinuation { continuation in
            pipeline.store(request) { _, _, _ in continuation.resume() }
        }
    }

    @Test("Scenario 44: a store is announced to global and pipeline observers and posted, manually stored, on the delegate queue")
    func storeAnnounced() async throws {
        let p = try pipeline("a")
        let global = StoreRecorder(), own = StoreRecorder()
        configuration.addObserver(global)
        configuration.addObserver(global)   // twice: still told once
        p.observer = own
        let posted = Recorded<StoredImageInfo>()
        let token = NotificationCenter.default.addObserver(
            forName: ImagePipeline.didStoreCachedImageNotification, object: p, queue: nil
        ) { notification in
            if let info = StoredImageInfo(notification: notification) { posted.append(info) }
        }
        defer { NotificationCenter.default.removeObserver(token) }

        let data = try StoreOperationTests.jpeg()
        await store(StoreRequest(url: URL(string: "http://t/a")!, identifier: "I", source: .data(data)), in: p)
        // The notification is posted on the delegate queue after the completion: let that queue drain.
        await withCheckedContinuation { continuation in configuration.delegateQueue.async { continuation.resume() } }

        for info in [global.stored.all, own.stored.all, posted.all] {
            #expect(info.count == 1)
            #expect(info.first?.identifier == "I" && info.first?.wasManuallyStored == true)
            #expect(info.first?.dimensions == PixelSize(width: 40, height: 30) && info.first?.pipelineIdentifier == p.identifier)
        }

        configuration.removeObserver(global)
        await store(StoreRequest(url: URL(string: "http://t/a")!, identifier: "J", source: .data(data)), in: p)
        #expect(global.stored.count == 1 && own.stored.count == 2)
    }

    @Test("Global observers are held weakly")
    func observersWeak() throws {
        var recorder: StoreRecorder? = StoreRecorder()
        configuration.addObserver(recorder!)
        #expect(configuration.observers.count == 1)
        recorder = nil
        #expect(configuration.observers.isEmpty)
    }

    @Test("Problems an operator should act on reach the logger at warning, with their kind as metadata; routine ones, identifiers and URLs only at debug")
    func problemsLogged() throws {
        let messages = Recorded<(Logger.Level, String)>()
        var logger = Logger(label: "test") { _ in CapturingLogHandler(messages: messages) }
        logger.logLevel = .debug
        configuration.logger = logger
        configuration.report(.diskCacheEntryCorrupt(identifier: "https://secret.example/a.jpg?token=1", reason: "gone"))
        configuration.report(.imageDownloadedWithUnnecessaryError(identifier: "https://secret.example/b.jpg",
                                                                  error: .connectionRefused))
        let logged = messages.all
        let warnings = logged.filter { $0.0 == .warning }.map(\.1)
        #expect(warnings == ["pipeline problem detail=diskCacheEntryCorrupt problem=diskCacheEntryCorrupt"])
        #expect(logged.contains { $0.0 == .debug && $0.1.contains("identifier=https://secret.example/a.jpg") })
        #expect(logged.contains { $0.0 == .debug && $0.1.contains("problem=imageDownloadedWithUnnecessaryError") })

        configuration.logger = nil
        configuration.report(.diskCacheEntryCorrupt(identifier: "x", reason: "gone"))
        #expect(messages.count == logged.count)
    }

    @Test("Inspecting all pipelines covers every live pipeline on the configuration, and only those")
    func inspectAll() throws {
        let a = try pipeline("a"), b = try pipeline("b")
        var c: ImagePipeline? = try pipeline("c")
        let image = CachedImageData(data: Data(repeating: 3, count: 256), url: URL(string: "http://t/x")!,
                                    dimensions: PixelSize(width: 8, height: 8))
        a.diskCache?.storeComplete(image, identifier: "X")
        b.memoryCache.storeComplete(image, identifier: "Y")
        c = nil
        _ = c
        let all = configuration.inspectAllPipelines()
        #expect(Set(all.keys) == [a.identifier, b.identifier])
        #expect(all[a.identifier]?.completeDiskEntries.map(\.identifier) == ["X"])
        #expect(all[b.identifier]?.completeMemoryEntries.map(\.identifier) == ["Y"])
        let other = GlobalConfiguration()
        #expect(other.inspectAllPipelines().isEmpty)
    }

    @Test("Dirtying an identifier everywhere marks every pipeline's renditions")
    func dirtyEverywhere() throws {
        let a = try pipeline("a"), b = try pipeline("b")
        let bitmap = try Bitmap(width: 4, height: 4) { _, _ in }
        let rendition = RenderedImage(image: ImageContainer(bitmap: bitmap), transformerIdentifier: nil,
                                      sourceDimensions: PixelSize(width: 4, height: 4), isDirty: false)
        a.renderedCache.store(rendition, identifier: "I")
        b.renderedCache.store(rendition, identifier: "I")
        configuration.dirtyAllRenderedMemoryCacheImages(identifier: "I")
        let target = TargetSizing(dimensions: PixelSize(width: 4, height: 4), contentMode: .fit)
        #expect(a.renderedCache.image(for: "I", target: target)?.isDirty == true)
        #expect(b.renderedCache.image(for: "I", target: target)?.isDirty == true)
    }
}
