import Foundation

/// GIF through giflib: still and animated, composited as browsers show them.
///
/// Frames come out full-screen (disposal none / background / previous, transparency, frames partly or wholly
/// outside the screen clipped), with per-frame durations (delays under 2 cs shown for 0.1 s, as browsers do)
/// and the loop count: 0 for forever, the NETSCAPE2.0 value otherwise, 1 when the file has no loop extension
/// (it plays once). Read-only: no encoder.
public struct GIFCodec: ImageCodec {
    public init() {}
    public var imageType: ImageType { .gif }
    public var decoder: any ImageDecoder { GIFDecoder() }
    public var supportsAnimation: Bool { true }
}

/// Detects GIF data and starts ``GIFCodec`` sessions.
public struct GIFDecoder: ImageDecoder {
    public init() {}

    /// `GIF87a` or `GIF89a`.
    public func detect(_ data: Data, isComplete: Bool) -> ImageDetection {
        .matching(data, signatures: ["GIF87a", "GIF89a"].map { $0.utf8.map(Optional.some) }, isComplete: isComplete)
    }

    public func makeSession(configuration: DecoderConfiguration, expectedByteCount: Int?) -> any ImageDecodingSession {
        GIFDecodingSession(configuration: configuration)
    }
}
