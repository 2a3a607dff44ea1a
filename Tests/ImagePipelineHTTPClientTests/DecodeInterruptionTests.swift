import Foundation
@testable import ImagePipelineKit
import PipelineLocking
import Testing
import TestSupport

/// A format of our own for the test: "SLOWIMG" and anything after. Decoding takes 200 steps of 5 ms, with a
/// checkpoint before each, so a test can cancel a fetch while it provably decodes.
private final class SlowDecoder: ImageDecoder, @unchecked Sendable {
    // @unchecked: the counters are locked.
    static let magic = Data("SLOWIMG".utf8)
    let steps = Locked(0)
    let decodes = Locked(0)

    func detect(_ data: Data, isComplete: Bool) -> ImageDetection {
        if data.starts(with: Self.magic) { return .match }
        return data.count < Self.magic.count && Self.magic.starts(with: data) ? .needMoreData : .noMatch
    }

    func makeSession(configuration: DecoderConfiguration, expectedByteCount: Int?) -> any ImageDecodingSession {
        SilentSession()
    }

    func decode(_ data: Data, target: TargetSizing, configuration: DecoderConfiguration) throws -> DecodedImage {
        decodes.withLock { $0 += 1 }
        for _ in 0..<200 {
            try DecodeInterruption.checkpoint()
            steps.withLock { $0 += 1 }
            usleep(5_000)
        }
        let bitmap = try Bitmap(width: 4, height: 4) { pixels, stride in memset(pixels, 0xFF, stride * 4) }
        return DecodedImage(container: ImageContainer(bitmap: bitmap),
                            properties: ImageProperties(type: SlowCodec.type, dimensions: PixelSize(width: 4, height: 4)))
    }
}

/// Shows nothing while downloading.
private final class SilentSession: ImageDecodingSession {
    var properties: ImageProperties? { nil }
    func append(_ data: Data) throws -> DecoderProgress { .didProgress }
    func finish() throws -> DecoderProgress { .didProgress }
    func render(_ mode: RenderMode, target: TargetSizing) throws -> ImageContainer? { nil }
}

private struct SlowCodec: ImageCodec {
    static let type = ImageType(rawValue: "test.slow-image")
    let decoder: any ImageDecoder
    var imageType: ImageType { Self.type }
}

/// Counts the checkpoints a decode asks at.
private final class CheckpointCount: Sendable {
    let asked = Locked(0)

    /// An interruption that counts here and says stop at the `n`th checkpoint.
    func stopping(atCheckpoint n: Int) -> DecodeInterruption {
        DecodeInterruption { [self] in
            asked.withLock { count -> Bool in
                count += 1
                return count >= n
            }
        }
    }
}

@Suite("Decodes stop when nobody wants them (cells scrolled off cancel before their decode)", .serialized)
struct DecodeInterruptionTests {
    @Test("An animation's decode stops at the next frame once its interruption says so; without one it runs to the end")
    func codecCheckpoints() throws {
        let gif = try Data(contentsOf: ProgressiveTests.images.appendingPathComponent("fire.gif"))
        let target = TargetSizing(dimensions: PixelSize(width: 256, height: 256), contentMode: .fill)
        let checkpoints = CheckpointCount()
        // Stops at the fifth checkpoint: well before fire.gif's 33 frames are read and scaled.
        let interruption = checkpoints.stopping(atCheckpoint: 5)
        #expect(throws: ImageCodecError.interrupted) {
            try DecodeInterruption.$current.withValue(interruption) { try CodecCatalogue.shared.decode(gif, target: target) }
        }
        #expect(checkpoints.asked.withLock { $0 } == 5)
        let whole = try CodecCatalogue.shared.decode(gif, target: target)
        #expect(whole.container.frameCount == 33)
        #expect(ImageCodecError.interrupted.code == 7 && ImageCodecError.interrupted.codeName == "interrupted")
    }

    @Test("A JPEG's decode is asked after every 64K pixels of rows, and stops there")
    func jpegRowCheckpoints() throws {
        let jpeg = try Data(contentsOf: CoordinatorHarness.imageURL.deletingLastPathComponent()
            .appendingPathComponent("skimage-hubble_deep_field.jpg"))
        let target = TargetSizing(dimensions: PixelSize(width: 256, height: 256))
        let counted = CheckpointCount()
        // Never stops: asks to stop at a checkpoint no decode reaches.
        _ = try DecodeInterruption.$current.withValue(counted.stopping(atCheckpoint: .max)) {
            try CodecCatalogue.shared.decode(jpeg, target: target)
        }
        // 436 rows of 500 pixels at 1/2 scale: a check after each 64K pixels, three in all, besides the
        // checkpoints before and after the decode.
        #expect(counted.asked.withLock { $0 } == 5)
        let checkpoints = CheckpointCount()
        // The third checkpoint is the second among the rows: the decode stops halfway.
        #expect(throws: ImageCodecError.interrupted) {
            try DecodeInterruption.$current.withValue(checkpoints.stopping(atCheckpoint: 3)) {
                try CodecCatalogue.shared.decode(jpeg, target: target)
            }
        }
        #expect(checkpoints.asked.withLock { $0 } == 3)
        // The next decode of the same bytes is unaffected.
        #expect(try CodecCatalogue.shared.decode(jpeg, target: target).container.dimensions.width == 256)
    }

    @Test("PNG and WebP decodes are asked between slices of their bytes, and stop there")
    func sliceCheckpoints() throws {
        let images = CoordinatorHarness.imageURL.deletingLastPathComponent()
        let target = TargetSizing(dimensions: PixelSize(width: 256, height: 256))
        for name in ["skimage-chelsea.png", "skimage-camera.png"] {
            let png = try Data(contentsOf: images.appendingPathComponent(name))
            let counted = CheckpointCount()
            let whole = try DecodeInterruption.$current.withValue(counted.stopping(atCheckpoint: .max)) {
                try CodecCatalogue.shared.decode(png, target: target)
            }
            // One checkpoint per 64 KiB slice, one before rendering.
            #expect(counted.asked.withLock { $0 } == (png.count + (64 << 10) - 1) / (64 << 10) + 1, "\(name)")
            let checkpoints = CheckpointCount()
            #expect(throws: ImageCodecError.interrupted) {
                try DecodeInterruption.$current.withValue(checkpoints.stopping(atCheckpoint: 2)) {
                    try CodecCatalogue.shared.decode(png, target: target)
                }
            }
            // Decoded in slices, the image is the same as decoded at once through one session.
            let session = PNGDecoder().makeSession(configuration: DecoderConfiguration(), expectedByteCount: png.count)
            _ = try session.append(png)
            _ = try session.finish()
            let atOnce = try #require(try session.render(.completeImage, target: target))
            #expect(whole.container.bitmap.withUnsafeBytes { Data($0) } == atOnce.bitmap.withUnsafeBytes { Data($0) })
        }
    }

    @Test("A fetch cancelled while it decodes stops decoding and ends cancelled; a fetch that shares the decode keeps it going")
    func cancelledFetchStopsItsDecode() async throws {
        let decoder = SlowDecoder()
        CodecCatalogue.shared.setCodec(SlowCodec(decoder: decoder))
        defer { _ = CodecCatalogue.shared.removeCodec(for: SlowCodec.type) }
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            h.server.setAsset(SlowDecoder.magic + Data(count: 1000), at: "/slow.img", contentType: "application/octet-stream")
            let request = h.request("/slow.img", identifier: "S", target: PixelSize(width: 4, height: 4))
            let delegate = RecordingFetchDelegate()
            let operation = h.pipeline.operation(with: request, delegate: delegate)
            h.pipeline.fetchImage(with: operation)
            #expect(try await eventually { decoder.steps.withLock { $0 } >= 3 })
            operation.cancel()
            #expect(await delegate.finished().isCancelled)
            #expect(operation.metrics?.decodeWasInterrupted == true)
            let steps = decoder.steps.withLock { $0 }
            #expect(steps < 100)   // 200 without the interruption
            // A cancelled fetch stores nothing it did not decode, and it let the coordinator forget its download
            // (the next fetches make a request of their own, below).
            #expect(h.pipeline.memoryCache.entry(for: "S") == nil)

            // Two fetches share one decode: cancelling the one that runs it does not stop it for the other.
            decoder.steps.withLock { $0 = 0 }
            let first = RecordingFetchDelegate(), second = RecordingFetchDelegate()
            let (running, sharing) = h.onDelegateQueue { () -> (FetchOperation, FetchOperation) in
                let a = h.pipeline.operation(with: request, delegate: first)
                let b = h.pipeline.operation(with: request, delegate: second)
                h.pipeline.fetchImage(with: a)
                h.pipeline.fetchImage(with: b)
                return (a, b)
            }
            // Both fetches are in the decode once one of them waits for the other's: on a loaded machine the
            // second can hear of the download's end well after the first began decoding.
            #expect(try await eventually { h.pipeline.sharedDecodes.waitingCallerCount == 1 })
            let decodesSoFar = decoder.decodes.withLock { $0 }
            running.cancel()
            // The one cancelled ends cancelled if it was waiting for the other's decode, or with the image if it
            // was running the decode for both.
            let firstOutcome = await first.finished()
            #expect(firstOutcome.isCancelled || (try? firstOutcome.get()) != nil)
            #expect(running.metrics?.decodeWasInterrupted == false)
            #expect(try await second.finished().get().image.dimensions == PixelSize(width: 4, height: 4))
            #expect(sharing.metrics?.decodeWasInterrupted == false)
            #expect(decoder.decodes.withLock { $0 } == decodesSoFar)   // one decode for both
            #expect(h.server.requestLog.count == 2)
        }
    }
}
