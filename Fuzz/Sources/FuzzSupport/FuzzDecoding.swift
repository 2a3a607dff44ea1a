import Foundation
import ImagePipelineKit

/// What the decoder targets share: limits that keep one input cheap, and the contract every decode must keep.
///
/// A finding is a crash (a Swift trap, a sanitizer report, a signal), a hang, an error that is not an
/// ``ImageCodecError``, or a render whose size breaks ``ImageDecodingSession/render(_:target:)``'s promise.
/// A typed error is never a finding: rejecting hostile bytes is the point.
public enum FuzzDecoding {
    /// Far below the library's defaults (64 Mpx, 256 MiB): a huge but legal image is not a bug, yet a few of
    /// them decoded per second would exhaust libFuzzer's RSS limit (`-rss_limit_mb`) and slow every run to a
    /// crawl. Small limits also make the fuzzer reach the limit checks themselves, which are worth testing.
    public static let configuration = DecoderConfiguration(
        limits: DecodingLimits(maxPixels: 1 << 20, maxDimension: 4096, maxFrames: 16, maxBytes: 24 << 20))

    /// The built-in decoders, in a fixed order so a selector byte picks the same one on every run.
    public static let decoders: [any ImageDecoder] = [JPEGDecoder(), PNGDecoder(), GIFDecoder(), WebPDecoder()]

    /// A small scaled render besides the original: the scalers are part of every decode a pipeline does.
    public static let thumbnail = TargetSizing(dimensions: PixelSize(width: 37, height: 23), contentMode: .fill)

    /// Decodes complete `data` in one go with `decoder`, at the original size and then at a thumbnail
    /// (which, for JPEG, takes libjpeg's DCT-scaled path).
    public static func decodeOnce(_ data: Data, with decoder: any ImageDecoder) {
        for target in [TargetSizing.original, thumbnail] {
            var configuration = configuration
            configuration.preferredSizing = target == .original ? nil : target
            do {
                let image = try decoder.decode(data, target: target, configuration: configuration)
                checkRender(image.container, of: image.properties, at: target)
            } catch {
                expectTyped(error)
                return   // the same bytes fail the same way at any size
            }
        }
    }

    /// Traps unless `container` has the size the render contract promises.
    public static func checkRender(_ container: ImageContainer, of properties: ImageProperties?, at target: TargetSizing) {
        guard let properties else { fatalError("a render came back before the session had properties") }
        // An animation (more than one frame, or properties that say it animates) is reduced but never enlarged.
        let expected = target.scaledSize(of: properties.dimensions, isAnimated: properties.isAnimated || container.isAnimated)
        if container.dimensions != expected {
            fatalError("render is \(container.dimensions), the contract says \(expected) for \(properties.dimensions)")
        }
    }

    /// Traps on an error that is not an ``ImageCodecError``: callers (and the CLI's error codes) rely on the
    /// typed error to tell bad data from a broken pipeline.
    public static func expectTyped(_ error: any Error) {
        if !(error is ImageCodecError) { fatalError("untyped decoding error: \(error)") }
    }
}

/// Reads the libFuzzer input as a pointer and count, the way `LLVMFuzzerTestOneInput` receives it.
public func fuzzData(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Data {
    guard let bytes, count > 0 else { return Data() }
    return Data(bytes: bytes, count: count)
}
