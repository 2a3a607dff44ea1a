import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import Testing
import TestSupport

/// Content negotiation against the loopback origin: a CDN-style path with an AVIF and a JPEG variant.
@Suite("Content negotiation: the origin serves AVIF to a pipeline that asks for it", .serialized,
       .enabled(if: ModernFormatTool.path("avifenc") != nil, "avifenc not installed (libavif-bin): skipped"))
struct ContentNegotiationTests {
    @Test("A fetch's Accept lists image/avif first, gets the AVIF variant and decodes it", arguments: CoordinatorDownloader.allCases)
    func pipelineGetsAVIF(kind: CoordinatorDownloader) async throws {
        let (avif, jpeg) = try await NegotiationFixtures.variants()
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            h.server.setVariants([OriginVariant(avif, mediaType: "image/avif"), OriginVariant(jpeg, mediaType: "image/jpeg")],
                                 at: "/photo")
            let (fetched, _) = await h.fetch(h.request("/photo", identifier: "photo"))
            #expect(fetched.events.last == .final(.network))
            let result = try await fetched.finished().get()
            // The AVIF is 96x64; the JPEG fallback 40x30: the size says which one was decoded.
            #expect(result.originalDimensions == PixelSize(width: 96, height: 64))
            #expect(result.image.bitmap.size == PixelSize(width: 96, height: 64))
            let request = try #require(h.server.requests(to: "/photo").first)
            let accept = try #require(request.header("Accept"))
            #expect(accept.hasPrefix("image/avif, image/jxl, image/webp, image/png, image/jpeg, image/gif"), "\(accept)")
            #expect(request.status == 200 && request.bytesSent == avif.count)
        }
    }

    @Test("A request that does not accept AVIF gets the JPEG fallback from the same path")
    func fallbackWithoutAVIF() async throws {
        let (avif, jpeg) = try await NegotiationFixtures.variants()
        let server = try await ImageOriginServer.start(port: 0)
        server.setVariants([OriginVariant(avif, mediaType: "image/avif"), OriginVariant(jpeg, mediaType: "image/jpeg")],
                           at: "/photo")
        for (accept, expected) in [("image/webp, image/jpeg", jpeg), ("image/avif;q=0, */*;q=0.5", jpeg), ("image/*", avif)] {
            var headers = DownloadHeaders()
            headers.add(name: "Accept", value: accept)
            let body = try await NegotiationFixtures.download(DownloadRequest(url: server.url(for: "/photo"), headers: headers))
            #expect(isSameBytes(body, expected), "Accept: \(accept); sent \(server.requestLog.last?.header("Accept") ?? "none")")
        }
        try await server.shutdown()
    }
}

enum NegotiationFixtures {
    /// A 96x64 AVIF made by avifenc from a PNG we encode, and a 40x30 JPEG.
    static func variants() async throws -> (avif: Data, jpeg: Data) {
        let bitmap = try Bitmap(width: 96, height: 64) { pixels, stride in
            for y in 0..<64 { memset(pixels + y * stride, Int32(y * 4), 96 * 4) }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-negotiation-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let png = directory.appendingPathComponent("in.png"), avif = directory.appendingPathComponent("out.avif")
        try CodecCatalogue.shared.encode(ImageContainer(bitmap: bitmap), as: .png).write(to: png)
        let outcome = try await ChildProcess.run(try #require(ModernFormatTool.path("avifenc")), ["-s", "10", png.path, avif.path], timeout: 60)
        try #require(outcome.exitCode == 0, "avifenc failed")
        let small = try Bitmap(width: 40, height: 30) { pixels, stride in memset(pixels, 0xFF, stride * 30) }
        return (try Data(contentsOf: avif), try CodecCatalogue.shared.encode(ImageContainer(bitmap: small), as: .jpeg))
    }

    /// The body of one download through URLSessionDownloader.
    static func download(_ request: DownloadRequest) async throws -> Data {
        let collector = BodyCollector()
        _ = URLSessionDownloader().startDownload(request, delegate: collector)
        #expect(try await eventually { collector.isComplete })
        return collector.body
    }
}

/// Collects a download's body.
private final class BodyCollector: ImageDownloadDelegate, @unchecked Sendable {
    // @unchecked: every field is behind `lock`.
    private let lock = NSLock()
    private var data = Data()
    private var complete = false
    var body: Data { lock.withLock { data } }
    var isComplete: Bool { lock.withLock { complete } }
    func download(_ task: any ImageDownloadTask, didReceive response: DownloadResponse) {}
    func download(_ task: any ImageDownloadTask, didReceive chunk: Data) { lock.withLock { data.append(chunk) } }
    func download(_ task: any ImageDownloadTask, didCompleteWith error: DownloadError?) { lock.withLock { complete = true } }
}
