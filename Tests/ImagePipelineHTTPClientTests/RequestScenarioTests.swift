import Foundation
import ImageOriginServer
import ImagePipelineKit
import Testing
import TestSupport

/// What a fetch's request does on the wire, and how a fetch fails: TIP's scenarios 32 to 35 and 37. A fetch
/// error's code is TIP's `TIPImageFetchErrorDomain` code: the raw values are checked as well as the names.
@Suite("Requests and failures: hydration, authorization, bad answers, invalid requests (scenarios 32-35, 37)", .serialized)
struct RequestScenarioTests {
    /// A hydration that adds `name: value` to the download request.
    static func addingHeader(_ name: String, _ value: String) -> ImageDownloadRequest.Hydration {
        { request in
            var request = request
            request.headers.add(name: name, value: value)
            return request
        }
    }

    /// What a hydration throws; `token` tells this error from any other of the type.
    struct HydrationRefused: Error, Equatable {
        let token: UUID
    }

    @Test("Scenario 32: a hydration adding X-Foo: 1 reaches the server; one changing the URL fails with code 4; one that fails makes the fetch fail with its error",
          arguments: CoordinatorDownloader.allCases)
    func hydration(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            var adding = h.request()
            adding.hydration = Self.addingHeader("X-Foo", "1")
            let (added, _) = await h.fetch(adding)
            #expect(added.events.last == .final(.network))
            #expect(h.server.requestLog.count == 1 && h.server.requestLog.last?.header("X-Foo") == "1")

            // Other identifiers, so that the image cached above cannot answer.
            var moving = h.request(identifier: "M")
            let elsewhere = h.server.url(for: "/elsewhere.jpg")
            moving.hydration = { request in
                var request = request
                request.url = elsewhere
                return request
            }
            let (moved, movedOperation) = await h.fetch(moving)
            #expect(moved.events.last == .failure(.illegalModificationByHydration) && movedOperation.state == .failed)
            #expect(movedOperation.error?.code.rawValue == 4)

            let thrown = HydrationRefused(token: UUID())
            var refusing = h.request(identifier: "R")
            refusing.hydration = { _ in throw thrown }
            let (_, refusedOperation) = await h.fetch(refusing)
            #expect(refusedOperation.state == .failed && refusedOperation.finalResult == nil)
            #expect(refusedOperation.error?.underlying as? HydrationRefused == thrown)
            // Neither failed fetch sent a request.
            #expect(h.server.requestLog.count == 1)
        }
    }

    @Test("Scenario 33: an authorization closure returning Bearer t makes the downloader send Authorization: Bearer t",
          arguments: CoordinatorDownloader.allCases)
    func authorization(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            var authorized = h.request()
            authorized.authorization = { _ in "Bearer t" }
            let (delegate, _) = await h.fetch(authorized)
            #expect(delegate.events.last == .final(.network))
            // A request without the closure, for contrast: the header comes from the closure alone.
            let (plain, _) = await h.fetch(h.request(identifier: "N"))
            #expect(plain.events.last == .final(.network))
            #expect(h.server.requestLog.map(\.authorization) == ["Bearer t", nil])
        }
    }

    @Test("Scenario 34: a 404 fails the fetch with code 2 carrying status 404, and nothing is cached",
          arguments: CoordinatorDownloader.allCases)
    func notFound(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let (missing, operation) = await h.fetch(h.request("/missing.jpg"))
            #expect(missing.events.last == .failure(.httpTransactionError) && operation.error?.code.rawValue == 2)
            #expect(operation.error?.httpStatusCode == 404)
            #expect(h.server.requestLog.map(\.status) == [404])
            #expect(h.pipeline.diskCache?.entry(for: "I") == nil && h.pipeline.memoryCache.entry(for: "I") == nil)
        }
    }

    @Test("Scenario 35: a 200 whose body is not an image fails the fetch with code 3 and reports the could-not-decode problem",
          arguments: CoordinatorDownloader.allCases)
    func notAnImage(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let page = Data("<html>not an image</html>".utf8)
            h.server.setAsset(page, at: "/page.jpg", contentType: "text/html")
            let (delegate, operation) = await h.fetch(h.request("/page.jpg", identifier: "P"))
            #expect(h.server.requestLog.map(\.status) == [200])
            #expect(delegate.events.last == .failure(.couldNotDecodeImage) && operation.error?.code.rawValue == 3)
            #expect(h.problems.all.contains {
                if case .imageDownloadedCouldNotBeDecoded("P", page.count) = $0 { true } else { false }
            })
            #expect(h.pipeline.diskCache?.entry(for: "P") == nil)
        }
    }

    @Test("Scenario 37: an empty identifier fails the fetch with code 1; a negative target size reports the invalid-target-dimensions problem and the fetch goes on",
          arguments: CoordinatorDownloader.allCases)
    func invalidRequests(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let (invalid, invalidOperation) = await h.fetch(h.request(identifier: ""))
            #expect(invalid.events == [.failure(.invalidRequest)] && invalidOperation.error?.code.rawValue == 1)
            #expect(h.server.requestLog.isEmpty)

            let negative = PixelSize(width: -100, height: 100)
            let (delegate, operation) = await h.fetch(h.request(target: negative))
            #expect(h.problems.all.filter {
                if case .invalidTargetDimensions("I", negative) = $0 { true } else { false }
            }.count == 1)
            #expect(delegate.events.last == .final(.network) && operation.state == .succeeded)
            #expect(operation.finalResult?.image.dimensions == h.imageSize)
        }
    }
}
