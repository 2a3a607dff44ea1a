import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import Testing
import TestSupport

/// What a fetch's request tells the server about the client: the formats it decodes and who it is.
@Suite("Request headers: Accept lists the decodable formats, User-Agent names the library", .serialized)
struct RequestHeadersTests {
    @Test("A fetch asks for exactly the formats the codecs decode, and names ImagePipelineKit as its agent",
          arguments: CoordinatorDownloader.allCases)
    func acceptAndUserAgent(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let (fetched, _) = await h.fetch(h.request())
            #expect(fetched.events.last == .final(.network))
            let request = try #require(h.server.requests(to: "/a.jpg").first)
            let accept = try #require(request.header("Accept"))
            #expect(accept == CodecCatalogue.shared.acceptHeaderValue)
            for type in ["image/jpeg", "image/png", "image/gif", "image/webp"] {
                #expect(accept.contains(type), "\(accept)")
            }
            #expect(!accept.contains("*"), "a wildcard would let a server pick a format nothing here decodes")
            #expect(request.header("User-Agent") == DownloadHeaders.defaultUserAgent)
        }
    }

    @Test("A format whose codec is removed is no longer asked for")
    func acceptFollowsTheCatalogue() {
        let catalogue = CodecCatalogue(codecs: CodecCatalogue.shared.imageTypes.compactMap { CodecCatalogue.shared.codec(for: $0) })
        #expect(catalogue.acceptHeaderValue.contains("image/webp"))
        catalogue.removeCodec(for: .webp)
        #expect(!catalogue.acceptHeaderValue.contains("image/webp"))
        #expect(catalogue.acceptHeaderValue.contains("image/jpeg"))
    }

    @Test("A downloader given its own agent sends it", arguments: CoordinatorDownloader.allCases)
    func ownUserAgent(kind: CoordinatorDownloader) async throws {
        let server = try await ImageOriginServer.start(port: 0)
        server.setAsset(Data([0xFF, 0xD8, 0xFF, 0xD9]), at: "/x.jpg", contentType: "image/jpeg")
        let downloader: any ImageDownloader = switch kind {
        case .urlSession: URLSessionDownloader(userAgent: "FeedReader/2.1")
        case .httpClient: HTTPClientDownloader(userAgent: "FeedReader/2.1")
        }
        let delegate = CompletionRecorder()
        _ = downloader.startDownload(DownloadRequest(url: server.url(for: "/x.jpg")), delegate: delegate)
        #expect(try await eventually { delegate.completions.all.count == 1 })
        #expect(server.requests(to: "/x.jpg").first?.header("User-Agent") == "FeedReader/2.1")
        try await (downloader as? HTTPClientDownloader)?.shutdown()
        try await server.shutdown()
    }

    @Test("The default agent is the library's name and version")
    func defaultAgentNamesTheVersion() {
        #expect(DownloadHeaders.defaultUserAgent == "ImagePipelineKit/\(LibraryVersion.version)")
        #expect(!LibraryVersion.version.isEmpty)
    }

    @Test("A configuration's own Accept value replaces the catalogue's in every fetch's request", arguments: CoordinatorDownloader.allCases)
    func configuredAccept(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            h.configuration.acceptHeaderValue = "image/webp, image/jpeg;q=0.8"
            let (fetched, _) = await h.fetch(h.request())
            #expect(fetched.events.last == .final(.network))
            let request = try #require(h.server.requests(to: "/a.jpg").first)
            #expect(request.header("Accept") == "image/webp, image/jpeg;q=0.8")
        }
    }
}

/// Records a download's completions.
private final class CompletionRecorder: ImageDownloadDelegate {
    let completions = Recorded<DownloadError?>()
    func download(_ task: any ImageDownloadTask, didReceive response: DownloadResponse) {}
    func download(_ task: any ImageDownloadTask, didReceive chunk: Data) {}
    func download(_ task: any ImageDownloadTask, didCompleteWith error: DownloadError?) { completions.append(error) }
}
