import Foundation

/// Detects and decodes JPEG data (see ``JPEGCodec``).
public struct JPEGDecoder: ImageDecoder {
    public init() {}

    /// `FF D8 FF`: SOI followed by the first marker.
    public func detect(_ data: Data, isComplete: Bool) -> ImageDetection {
        .matching(data, signatures: [[0xFF, 0xD8, 0xFF]], isComplete: isComplete)
    }

    /// Progressive files render scan by scan; baseline files row by row.
    public var supportsProgressiveDecoding: Bool { true }

    public func makeSession(configuration: DecoderConfiguration, expectedByteCount: Int?) -> any ImageDecodingSession {
        JPEGDecodingSession(configuration: configuration, mode: .incremental)
    }

    /// One pass over complete data, DCT-scaled for `target`: no coefficients are kept for previews, and a
    /// thumbnail of a large photo decodes at 1/2, 1/4 or 1/8 of the work.
    public func decode(_ data: Data, target: TargetSizing, configuration: DecoderConfiguration) throws -> DecodedImage {
        var configuration = configuration
        configuration.preferredSizing = target
        let session = JPEGDecodingSession(configuration: configuration, mode: .oneShot)
        try DecodeInterruption.checkpoint()
        try data.withUnsafeBytes { bytes in
            _ = try session.appendWhole(bytes)
            _ = try session.finish()
        }
        try DecodeInterruption.checkpoint()
        guard let container = try session.render(.completeImage, target: target), let properties = session.properties
        else { throw ImageCodecError.truncated }
        return DecodedImage(container: container, properties: properties)
    }
}

extension TargetSizing {
    /// The largest DCT reduction (1, 2, 4 or 8) of a `stored`-size JPEG that still covers what this sizing
    /// asks of the displayed image, so only a quality downscale (never an upscale) follows.
    func jpegScaleDenominator(stored: PixelSize, orientation: ImageOrientation) -> Int {
        guard let dimensions, !dimensions.isEmpty, contentMode != .center else { return 1 }
        let wanted = scaledSize(of: orientation.displayedSize(ofStored: stored))
        let wantedStored = orientation.displayedSize(ofStored: wanted)   // the swap is its own inverse
        for denominator in [8, 4, 2] {
            let width = (stored.width + denominator - 1) / denominator
            let height = (stored.height + denominator - 1) / denominator
            if width >= wantedStored.width, height >= wantedStored.height { return denominator }
        }
        return 1
    }
}
