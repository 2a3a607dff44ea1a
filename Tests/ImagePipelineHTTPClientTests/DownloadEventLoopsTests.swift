import AsyncHTTPClient
import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import NIOCore
import NIOPosix
import PipelineLocking
import Testing

/// Which of its client's event loops `HTTPClientDownloader` starts downloads on.
@Suite("HTTPClientDownloader's event loops")
struct DownloadEventLoopsTests {
    @Test("A quarter of the client's loops by default, at least one; a count asked for, within the group")
    func counts() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 8)
        let client = HTTPClient(eventLoopGroup: group, configuration: HTTPClientDownloader.defaultConfiguration())
        #expect(HTTPClientDownloader(client: client).eventLoopCount == 2)
        #expect(HTTPClientDownloader(client: client, eventLoopCount: 3).eventLoopCount == 3)
        #expect(HTTPClientDownloader(client: client, eventLoopCount: 20).eventLoopCount == 8)
        #expect(HTTPClientDownloader(client: client, eventLoopCount: 0).eventLoopCount == 1)
        try await client.shutdown()

        let small = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let smallClient = HTTPClient(eventLoopGroup: small, configuration: HTTPClientDownloader.defaultConfiguration())
        #expect(HTTPClientDownloader(client: smallClient).eventLoopCount == 1)
        try await smallClient.shutdown()
        try await group.shutdownGracefully()
        try await small.shutdownGracefully()
    }

    @Test("Downloads started off the loops run on the loops asked for: one loop keeps them all, four spread them",
          arguments: [1, 4])
    func downloadsStayOnTheirLoops(loopCount: Int) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 4)
        let client = HTTPClient(eventLoopGroup: group, configuration: HTTPClientDownloader.defaultConfiguration())
        let downloader = HTTPClientDownloader(client: client, eventLoopCount: loopCount)
        let server = try await ImageOriginServer.start(port: 0)
        // Slow enough that all eight are in flight together, each on a connection of its own.
        server.setShaping(OriginShaping(bytesPerSecond: 400_000, firstByteLatency: .milliseconds(100)))
        for index in 0..<8 { server.setAsset(Fixtures.distinctJPEG(index), at: "/img\(index).jpg") }

        let delegates = (0..<8).map { index in
            let delegate = LoopRecordingDelegate()
            _ = downloader.startDownload(DownloadRequest(url: server.url(for: "/img\(index).jpg")), delegate: delegate)
            return delegate
        }
        for (index, delegate) in delegates.enumerated() {
            let record = try await delegate.recording.waitForCompletion(timeout: .seconds(30), settle: .zero)
            #expect(record.error == nil)
            #expect(record.body == Fixtures.distinctJPEG(index), "download \(index)")
        }
        let allowed = Array(group.makeIterator().prefix(loopCount))
        let seen = delegates.flatMap(\.loops)
        #expect(!seen.isEmpty, "no callback ran on an event loop")
        #expect(seen.allSatisfy { loop in allowed.contains { $0 === loop } }, "a callback ran on a loop not asked for")
        if loopCount > 1 {
            let distinct = allowed.filter { loop in seen.contains { $0 === loop } }
            #expect(distinct.count > 1, "eight downloads in flight together all ran on one loop")
        }

        try await server.shutdown()
        try await client.shutdown()
        try await group.shutdownGracefully()
    }
}

/// A ``RecordingDelegate`` that also notes the event loop each callback ran on, when it ran on one.
private final class LoopRecordingDelegate: ImageDownloadDelegate {
    let recording = RecordingDelegate()
    private let seen = Locked<[any EventLoop]>([])

    var loops: [any EventLoop] { seen.withLock { $0 } }

    private func note() {
        if let loop = MultiThreadedEventLoopGroup.currentEventLoop { seen.withLock { $0.append(loop) } }
    }

    func download(_ task: any ImageDownloadTask, didReceive response: DownloadResponse) {
        note()
        recording.download(task, didReceive: response)
    }

    func download(_ task: any ImageDownloadTask, didReceive chunk: Data) {
        note()
        recording.download(task, didReceive: chunk)
    }

    func download(_ task: any ImageDownloadTask, didCompleteWith error: DownloadError?) {
        note()
        recording.download(task, didCompleteWith: error)
    }
}
