import Foundation
import ImageOriginServer
import ImagePipelineKit
import Testing
import TestSupport

@Suite("async/await: image(for:) and events(for:) over the same pipeline", .serialized)
struct AsyncFetchTests {
    @Test("image(for:) loads from the network once, then from memory; the image is the origin's", arguments: CoordinatorDownloader.allCases)
    func imageForRequest(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let first = try await h.pipeline.image(for: h.request())
            #expect(first.source == .network && first.image.dimensions == h.imageSize)
            let second = try await h.pipeline.image(for: h.request())
            #expect(second.source == .memoryCache && second.image.dimensions == h.imageSize)
            #expect(h.server.requestLog.count == 1)
        }
    }

    @Test("events(for:) reports start, the sources tried in order, rising progress, then the final image", arguments: CoordinatorDownloader.allCases)
    func eventsInOrder(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            var events: [FetchEvent] = []
            for try await event in h.pipeline.events(for: h.request()) { events.append(event) }
            guard case .started = events.first else {
                Issue.record("first event \(String(describing: events.first))")
                return
            }
            let attempts = events.compactMap { if case .willAttemptToLoad(let source) = $0 { source } else { nil } }
            #expect(attempts == [.memoryCache, .diskCache, .additionalCache, .network])
            let progress = events.compactMap { if case .progress(let value) = $0 { value } else { nil } }
            #expect(!progress.isEmpty && progress == progress.sorted())
            guard case .finished(let result) = events.last else {
                Issue.record("last event \(String(describing: events.last))")
                return
            }
            #expect(result.source == .network && result.image.dimensions == h.imageSize)
        }
    }

    @Test("events(for:) carries the preview and the progressive scans; stopping at the preview throws -2")
    func previewAndScans() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            let progressive = try Data(contentsOf: ProgressiveTests.images.appendingPathComponent("skimage-astronaut-progressive.jpg"))
            h.server.setAsset(progressive, at: "/p.jpg", contentType: "image/jpeg")
            h.server.setShaping(OriginShaping(bytesPerSecond: 25_000), for: "/p.jpg")
            _ = try await h.pipeline.image(for: h.request())   // I via /a.jpg: the preview for /p.jpg
            var kinds: [String] = []
            for try await event in h.pipeline.events(for: h.request("/p.jpg")) {
                switch event {
                case .preview(let preview): kinds.append("preview:\(preview.url.path)")
                case .progressiveImage: if kinds.last != "scan" { kinds.append("scan") }
                case .finished(let result): kinds.append("final:\(result.source)")
                default: break
                }
            }
            #expect(kinds == ["preview:/a.jpg", "scan", "final:network"])
            await #expect(throws: FetchError.self) {
                for try await _ in h.pipeline.events(for: h.request("/p.jpg", identifier: "I"), previewDecision: .stopLoading) {}
            }
        }
    }

    @Test("A missing image throws the fetch's error from both APIs", arguments: CoordinatorDownloader.allCases)
    func errors(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            await #expect(throws: FetchError.self) { try await h.pipeline.image(for: h.request("/missing.jpg", identifier: "M")) }
            var sawFinal = false
            do {
                for try await event in h.pipeline.events(for: h.request("/missing.jpg", identifier: "M2")) {
                    if case .finished = event { sawFinal = true }
                }
                Issue.record("the sequence ended without an error")
            } catch let error as FetchError {
                #expect(error.code == .httpTransactionError || error.code == .couldNotDownloadImage, "\(error)")
            }
            #expect(!sawFinal)
        }
    }

    @Test("Cancelling the task cancels the fetch: image(for:) throws cancelled and the server sees the client go away", arguments: CoordinatorDownloader.allCases)
    func taskCancellation(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            h.server.stallNextResponse(to: "/a.jpg")
            let task = Task { try await h.pipeline.image(for: h.request()) }
            #expect(try await eventually { h.server.requestLog.first.map { $0.bytesSent > 0 } == true })
            task.cancel()
            let outcome = await task.result
            #expect(throws: FetchError.self) { try outcome.get() }
            if case .failure(let error as FetchError) = outcome { #expect(error.code == .cancelled) }
            #expect(try await eventually { h.server.requestLog.first?.clientWentAway == true })
        }
    }

    @Test("Leaving the events loop early cancels the fetch", arguments: CoordinatorDownloader.allCases)
    func leavingEarly(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            h.server.stallNextResponse(to: "/a.jpg")
            let events = h.pipeline.events(for: h.request())
            for try await event in events {
                if case .progress = event { break }
            }
            #expect(try await eventually { events.operation.isFinished })
            #expect(events.operation.state == .cancelled)
            #expect(events.operation.error?.code == .cancelled)
        }
    }
}
