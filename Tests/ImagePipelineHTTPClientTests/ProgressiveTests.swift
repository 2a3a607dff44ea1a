import Foundation
import ImageOriginServer
import ImagePipelineKit
import PipelineLocking
import Testing
import TestSupport

/// Progressive scans and animated first frames during a download, and scenario 58, over the loopback origin:
/// the bundled progressive JPEG, a baseline JPEG and an animated GIF, each shaped slow enough that scans and
/// frames arrive well before the end.
@Suite("Progressive scans and animated first frames while downloading, as policies allow (scenario 58)", .serialized)
struct ProgressiveTests {
    static let images = CoordinatorHarness.imageURL.deletingLastPathComponent()

    /// Serves the bundled file `name` at `path`, `bytesPerSecond` fast; with `pausingHalfway`, the body also
    /// pauses for half a second after its first half.
    static func serve(_ name: String, at path: String, _ h: FetchHarness, bytesPerSecond: Int,
                      pausingHalfway: Bool = false) throws -> Data {
        let data = try Data(contentsOf: images.appendingPathComponent(name))
        serve(data, at: path, h, bytesPerSecond: bytesPerSecond, pausingHalfway: pausingHalfway)
        return data
    }

    /// The pause is what makes "shown while it downloads" certain: the shaping alone spreads the body over a
    /// second or more, but a client whose event loop is held up (a loaded machine running many tests) reads
    /// what piled up in one go, and a session handed the rest of the file at once has nothing left to show.
    static func serve(_ data: Data, at path: String, _ h: FetchHarness, bytesPerSecond: Int?, pausingHalfway: Bool) {
        h.server.setAsset(data, at: path, contentType: "application/octet-stream")
        h.server.setShaping(OriginShaping(bytesPerSecond: bytesPerSecond), for: path)
        if pausingHalfway {
            h.server.setFaults([.pauseAfterBytes(data.count / 2, for: .milliseconds(500))], for: path)
        }
    }

    @Test("Scenario 58: a delegate that agrees sees scans of the progressive JPEG before the final image, at the target",
          arguments: CoordinatorDownloader.allCases)
    func progressiveScans(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            _ = try Self.serve("skimage-astronaut-progressive.jpg", at: "/p.jpg", h, bytesPerSecond: 25_000,
                               pausingHalfway: true)
            let target = PixelSize(width: 128, height: 128)
            let delegate = RecordingFetchDelegate(loadsProgressively: true)
            let operation = h.pipeline.operation(with: h.request("/p.jpg", identifier: "P", target: target), delegate: delegate)
            h.pipeline.fetchImage(with: operation)
            #expect(try await eventually(timeout: .seconds(20)) { operation.isFinished })
            let scans = delegate.incrementalImages
            #expect(!scans.isEmpty, "\(delegate.events)")
            #expect(operation.progressiveFrameCount == scans.count)
            #expect(scans.allSatisfy { $0.result.image.dimensions == operation.finalResult?.image.dimensions })
            #expect(scans.map(\.progress) == scans.map(\.progress).sorted() && scans.allSatisfy { $0.progress < 1 })
            let lastScan = try #require(delegate.events.lastIndex(of: .progressiveScan))
            #expect(lastScan < delegate.events.count - 1 && delegate.events.last == .final(.network))
            #expect(operation.metrics?.info(for: .network)?.result == .hitFinal)
        }
    }

    @Test("The final image of a download shown scan by scan is the scans' session's last pass: no second decode, the same pixels")
    func finalFromScansSession() async throws {
        try await Self.withCountingCodec(JPEGCodec(), serving: "skimage-astronaut-progressive.jpg", at: "/p.jpg",
                                         bytesPerSecond: 50_000) { h, counting, data in
            let target = PixelSize(width: 128, height: 128)
            let shown = RecordingFetchDelegate(loadsProgressively: true)
            let operation = h.pipeline.operation(with: h.request("/p.jpg", identifier: "P", target: target), delegate: shown)
            h.pipeline.fetchImage(with: operation)
            #expect(try await eventually(timeout: .seconds(20)) { operation.isFinished })
            #expect(!shown.incrementalImages.isEmpty, "\(shown.events)")
            try Self.expectFinishedFromItsSession(try #require(operation.finalResult), counting, data, at: target)

            // Without the scans there is no session to finish: the bytes are decoded once, on their own.
            let (declined, _) = await h.fetch(h.request("/p.jpg", identifier: "Q", target: target))
            #expect(declined.incrementalImages.isEmpty && declined.events.last == .final(.network))
            #expect(counting.oneShotDecodes.withLock { $0 } == 1)
        }
    }

    @Test("A still WebP, decoded while it downloads in case it animates, is not decoded a second time")
    func stillImageOfAnimatedFormat() async throws {
        try await Self.withCountingCodec(WebPCodec(), serving: "skimage-chelsea.webp", at: "/c.webp",
                                         bytesPerSecond: 50_000) { h, counting, data in
            let target = PixelSize(width: 128, height: 128)
            let (delegate, operation) = await h.fetch(h.request("/c.webp", identifier: "C", target: target))
            #expect(delegate.events.last == .final(.network) && delegate.incrementalImages.isEmpty)
            try Self.expectFinishedFromItsSession(try #require(operation.finalResult), counting, data, at: target)
        }
    }

    @Test("An animation whose first frame was shown goes on from the frames decoded for it: no second decode, the same frames")
    func animationFromFirstFrameSession() async throws {
        try await Self.withCountingCodec(GIFCodec(), serving: "fire.gif", at: "/fire.gif",
                                         bytesPerSecond: 16_000) { h, counting, data in
            let target = PixelSize(width: 64, height: 64)
            let (delegate, operation) = await h.fetch(h.request("/fire.gif", identifier: "F", target: target))
            #expect(delegate.events.filter { $0 == .firstAnimatedFrame }.count == 1, "\(delegate.events)")
            let final = try #require(operation.finalResult)
            #expect(final.image.isAnimated)
            try Self.expectFinishedFromItsSession(final, counting, data, at: target)
        }
    }

    @Test("An interlaced animation on a fast link, its first frame whole in the first read, still shows that frame and decodes once")
    func interlacedAnimationReadWholeFrameFirst() async throws {
        // fire.gif's frames are interlaced, and the first ends before byte 1600: the first read holds it whole.
        try await Self.withCountingCodec(GIFCodec(), serving: "fire.gif", at: "/fire.gif",
                                         bytesPerSecond: nil) { h, counting, data in
            let target = PixelSize(width: 64, height: 64)
            let (delegate, operation) = await h.fetch(h.request("/fire.gif", identifier: "F", target: target))
            #expect(delegate.events.filter { $0 == .firstAnimatedFrame }.count == 1, "\(delegate.events)")
            try Self.expectFinishedFromItsSession(try #require(operation.finalResult), counting, data, at: target)
        }
    }

    /// Serves the bundled file `name` at `path` at `bytesPerSecond` (`nil`: as fast as the client reads),
    /// pausing halfway, and runs `body` with `codec` in the shared catalogue, wrapped to count the one-shot
    /// decodes of the bytes served; the codec is put back after. The bytes served are the file's with a comment
    /// added, so that tests running meanwhile, which decode the same file through the same catalogue, are not
    /// counted.
    private static func withCountingCodec(
        _ codec: any ImageCodec, serving name: String, at path: String, bytesPerSecond: Int?,
        _ body: (FetchHarness, OneShotCountingCodec, Data) async throws -> Void
    ) async throws {
        let data = try markedCopy(of: Data(contentsOf: images.appendingPathComponent(name)), type: codec.imageType)
        let counting = OneShotCountingCodec(codec, counting: data)
        CodecCatalogue.shared.setCodec(counting)
        defer { CodecCatalogue.shared.setCodec(counting.wrapped) }
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            serve(data, at: path, h, bytesPerSecond: bytesPerSecond, pausingHalfway: true)
            try await body(h, counting, data)
        }
    }

    /// `image` with a comment that changes no pixel: a JPEG COM segment after SOI, a GIF comment extension
    /// before the trailer, bytes after a WebP's RIFF chunk (which decoders ignore).
    private static func markedCopy(of image: Data, type: ImageType) -> Data {
        let note = Data("progressive tests".utf8)
        switch type {
        case .jpeg:
            let length = note.count + 2
            return image.prefix(2) + Data([0xFF, 0xFE, UInt8(length >> 8), UInt8(length & 0xFF)]) + note + image.dropFirst(2)
        case .gif:
            return image.dropLast() + Data([0x21, 0xFE, UInt8(note.count)]) + note + Data([0x00]) + image.suffix(1)
        default:
            return image + note
        }
    }

    /// `result`, the final image of a download of `data`, came from the session that loaded it: `data` was never
    /// decoded on its own, and the frames are those of such a decode (by the wrapped codec), pixel for pixel.
    private static func expectFinishedFromItsSession(_ result: FetchResult, _ counting: OneShotCountingCodec, _ data: Data,
                                                     at target: PixelSize) throws {
        #expect(counting.oneShotDecodes.withLock { $0 } == 0)
        let alone = try counting.wrapped.decoder.decode(data, target: TargetSizing(dimensions: target),
                                                        configuration: DecoderConfiguration())
        #expect(result.image.dimensions == alone.container.dimensions)
        #expect(result.image.frameCount == alone.container.frameCount)
        let pixels = { (image: ImageContainer) in image.frames.map { frame in frame.bitmap.withUnsafeBytes { Data($0) } } }
        #expect(pixels(result.image) == pixels(alone.container))
    }

    @Test("Without the delegate's consent there are no scans; a baseline JPEG has none either")
    func noScans() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            _ = try Self.serve("skimage-astronaut-progressive.jpg", at: "/p.jpg", h, bytesPerSecond: 100_000)
            let (declined, _) = await h.fetch(h.request("/p.jpg", identifier: "P"))
            #expect(declined.incrementalImages.isEmpty && declined.events.last == .final(.network))

            _ = try Self.serve("skimage-rocket.jpg", at: "/b.jpg", h, bytesPerSecond: 100_000)
            let baseline = RecordingFetchDelegate(loadsProgressively: true)
            let operation = h.pipeline.operation(with: h.request("/b.jpg", identifier: "B"), delegate: baseline)
            h.pipeline.fetchImage(with: operation)
            #expect(try await eventually(timeout: .seconds(20)) { operation.isFinished })
            #expect(baseline.incrementalImages.isEmpty && operation.finalResult?.source == .network)
        }
    }

    @Test("A disabled policy shows nothing even with the delegate's consent")
    func disabledPolicy() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            _ = try Self.serve("skimage-astronaut-progressive.jpg", at: "/p.jpg", h, bytesPerSecond: 100_000)
            var request = h.request("/p.jpg", identifier: "P")
            request.progressiveLoadingPolicies = [.jpeg: DisabledProgressivePolicy()]
            let delegate = RecordingFetchDelegate(loadsProgressively: true)
            let operation = h.pipeline.operation(with: request, delegate: delegate)
            h.pipeline.fetchImage(with: operation)
            #expect(try await eventually(timeout: .seconds(20)) { operation.isFinished })
            #expect(delegate.incrementalImages.isEmpty && operation.finalResult != nil)
        }
    }

    @Test("An animated GIF shows its first frame once, mid-download, at the final image's size",
          arguments: CoordinatorDownloader.allCases)
    func firstAnimatedFrame(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let gif = try Self.serve("fire.gif", at: "/fire.gif", h, bytesPerSecond: 8_000, pausingHalfway: true)
            let delegate = RecordingFetchDelegate()
            let operation = h.pipeline.operation(with: h.request("/fire.gif", identifier: "F"), delegate: delegate)
            h.pipeline.fetchImage(with: operation)
            #expect(try await eventually(timeout: .seconds(20)) { operation.isFinished })
            #expect(delegate.events.filter { $0 == .firstAnimatedFrame }.count == 1, "\(gif.count) bytes: \(delegate.events)")
            let frame = try #require(delegate.incrementalImages.first)
            #expect(frame.progress > 0 && frame.progress < 1)
            let final = try #require(operation.finalResult)
            #expect(final.image.isAnimated && frame.result.image.dimensions == final.image.dimensions)
            #expect(!frame.result.image.isAnimated)
        }
    }
}

/// A built-in codec that counts the one-shot decodes of one byte sequence (other tests decode other images
/// meanwhile through the same catalogue).
private final class OneShotCountingCodec: ImageCodec, ImageDecoder, @unchecked Sendable {
    // @unchecked: the counter is locked; the rest is never changed.
    let oneShotDecodes = Locked(0)
    let wrapped: any ImageCodec
    private let counted: Data

    init(_ codec: any ImageCodec, counting data: Data) {
        wrapped = codec
        counted = data
    }

    var imageType: ImageType { wrapped.imageType }
    var decoder: any ImageDecoder { self }
    var encoder: (any ImageEncoder)? { wrapped.encoder }
    var supportsAnimation: Bool { wrapped.supportsAnimation }
    var supportsProgressiveDecoding: Bool { wrapped.decoder.supportsProgressiveDecoding }

    func detect(_ data: Data, isComplete: Bool) -> ImageDetection { wrapped.decoder.detect(data, isComplete: isComplete) }

    func makeSession(configuration: DecoderConfiguration, expectedByteCount: Int?) -> any ImageDecodingSession {
        wrapped.decoder.makeSession(configuration: configuration, expectedByteCount: expectedByteCount)
    }

    func decode(_ data: Data, target: TargetSizing, configuration: DecoderConfiguration) throws -> DecodedImage {
        if data == counted { oneShotDecodes.withLock { $0 += 1 } }
        return try wrapped.decoder.decode(data, target: target, configuration: configuration)
    }
}
