import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import Logging
import PipelineLocking
import TestSupport
import Testing
@testable import ImagePipelineService

/// A source named by a host name is downloaded from the address its name resolved to when the download started,
/// and a name that resolves to a refused address by then is never fetched. The resolver is the test's, so that a
/// name can point at the loopback origin (or change its answer) without a DNS server.
@Suite("image service: downloads connect to the address they checked")
struct PinnedSourceTests {
    @Test("a named source is fetched from the address its name resolved to, with the name in Host")
    func namedSourceIsPinned() async throws {
        let origin = try await ImageOriginServer.start()
        defer { Task { try? await origin.shutdown() } }
        origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/rocket.jpg")
        let asked = Locked<[String]>([])
        let resolve: @Sendable (String) async -> [SourceAddress] = { host in
            asked.withLock { $0.append(host) }
            return host == "images.test" ? [.v4(0x7F00_0001)] : []
        }
        var configuration = ImageServiceConfiguration()
        configuration.allowsUnsafeURLs = true
        configuration.sourcePolicy = SourcePolicy(allowedSources: ["images.test:\(origin.port)"], allowsPrivateAddresses: true)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-pinned-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let pipelines = try ImageServicePipelines(cacheDirectory: directory, limits: configuration.limits,
                                                  sourcePolicy: configuration.sourcePolicy,
                                                  name: "pinned-\(UUID().uuidString.prefix(8))", resolve: resolve)
        var logger = Logger(label: "pinned-test")
        logger.logLevel = .warning
        let service = ImageService(configuration: configuration, sourcePipeline: pipelines.sources,
                                   resultStore: pipelines.results, logger: logger)

        let answer = await service.respond(to: ImageServiceRequest(path: "/unsafe/64x64/images.test:\(origin.port)/rocket.jpg"))
        #expect(answer.status == 200, "\(answer.text)")
        #expect(try answer.decoded().size == PixelSize(width: 64, height: 64))
        #expect(asked.withLock { $0 } == ["images.test"], "the download resolved the name itself, once")
        let requests = origin.requests(to: "/rocket.jpg")
        #expect(requests.count == 1)
        #expect(requests.first?.header("Host") == "images.test:\(origin.port)", "the origin saw the source's name")
        try? await pipelines.shutdown()
    }

    @Test("a name that resolves to a refused address when its download starts is never fetched")
    func reboundNameIsRefused() async throws {
        let origin = try await ImageOriginServer.start()
        defer { Task { try? await origin.shutdown() } }
        origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/rocket.jpg")
        let transport = HTTPClientDownloader()
        // Public when the service checked it, loopback by the time the download resolves it.
        let downloader = PinnedSourceDownloader(transport: transport, allowsPrivateAddresses: false) { _ in [.v4(0x7F00_0001)] }
        let delegate = CompletionRecorder()
        var request = DownloadRequest(url: URL(string: "http://rebound.test:\(origin.port)/rocket.jpg")!)
        request.priority = .normal
        _ = downloader.startDownload(request, delegate: delegate)
        let error = try await delegate.completion()
        #expect("\(String(describing: error))".contains("non-public address 127.0.0.1"), "\(String(describing: error))")
        #expect(origin.requestLog.isEmpty, "the origin was never asked")

        // Allowed private addresses: the same name reaches the origin, at the address the resolver gave.
        let allowing = PinnedSourceDownloader(transport: transport, allowsPrivateAddresses: true) { _ in [.v4(0x7F00_0001)] }
        let allowed = CompletionRecorder()
        _ = allowing.startDownload(request, delegate: allowed)
        #expect(try await allowed.completion() == nil)
        #expect(allowed.bodyBytes == (try ServiceFixture.photo(ImageServiceTests.rocket)).count)
        #expect(origin.requests(to: "/rocket.jpg").first?.header("Host") == "rebound.test:\(origin.port)")
        try? await transport.shutdown()
    }

    @Test("a download cancelled while its name resolves completes once, cancelled, and asks nobody")
    func cancelledWhileResolving() async throws {
        let origin = try await ImageOriginServer.start()
        defer { Task { try? await origin.shutdown() } }
        let transport = HTTPClientDownloader()
        let downloader = PinnedSourceDownloader(transport: transport, allowsPrivateAddresses: true) { _ in
            try? await Task.sleep(for: .milliseconds(200))
            return [.v4(0x7F00_0001)]
        }
        let delegate = CompletionRecorder()
        let task = downloader.startDownload(DownloadRequest(url: URL(string: "http://slow.test:\(origin.port)/x.jpg")!),
                                            delegate: delegate)
        task.cancel()
        task.cancel()
        #expect(try await delegate.completion() == .cancelled)
        try await Task.sleep(for: .milliseconds(400))
        #expect(delegate.completionCount == 1)
        #expect(origin.requestLog.isEmpty)
        try? await transport.shutdown()
    }
}

/// Records a download's body size and its completions.
private final class CompletionRecorder: ImageDownloadDelegate {
    private let state = Locked<(bytes: Int, completions: [DownloadError?])>((0, []))

    var bodyBytes: Int { state.withLock { $0.bytes } }
    var completionCount: Int { state.withLock { $0.completions.count } }

    func download(_ task: any ImageDownloadTask, didReceive response: DownloadResponse) {}

    func download(_ task: any ImageDownloadTask, didReceive chunk: Data) {
        state.withLock { $0.bytes += chunk.count }
    }

    func download(_ task: any ImageDownloadTask, didCompleteWith error: DownloadError?) {
        state.withLock { $0.completions.append(error) }
    }

    /// The first completion, once it came (within ``eventually(timeout:_:)``'s ten seconds).
    func completion() async throws -> DownloadError? {
        guard try await eventually({ completionCount > 0 }) else { throw CancellationError() }
        return state.withLock { $0.completions[0] }
    }
}
