import Foundation
import Synchronization
import PipelineLocking

/// Maps image types to codecs (TIP's `TIPImageCodecCatalogue`). Thread-safe.
///
/// ``shared`` starts with the built-in codecs (AVIF, JPEG XL, WebP, PNG, JPEG, GIF); register your own with
/// ``setCodec(_:)`` or replace a built-in one with ``replaceCodec(for:using:)``.
public final class CodecCatalogue: Sendable {
    /// The catalogue pipelines use unless told otherwise.
    public static let shared = CodecCatalogue(codecs: CodecCatalogue.builtInCodecs)

    private struct State {
        var codecs: [ImageType: any ImageCodec] = [:]
        /// Registration order, for detection of formats without magic numbers.
        var order: [ImageType] = []
        /// ``acceptHeaderValue`` as last built, until the codecs change: every download asks for it.
        var acceptHeader: String?
        /// Counts changes of the codecs, so that a header built meanwhile is not kept.
        var generation = 0

        mutating func codecsChanged() {
            generation += 1
            acceptHeader = nil
        }
    }
    private let state = Locked(State())

    /// A catalogue holding `codecs` (later entries win for the same type).
    public init(codecs: [any ImageCodec] = []) {
        codecs.forEach(setCodec)
    }

    /// Every registered type, in registration order.
    public var imageTypes: [ImageType] { state.withLock { $0.order } }

    public func codec(for type: ImageType) -> (any ImageCodec)? {
        state.withLock { $0.codecs[type] }
    }

    public subscript(type: ImageType) -> (any ImageCodec)? { codec(for: type) }

    /// Registers `codec` for its ``ImageCodec/imageType``, replacing any codec of that type.
    public func setCodec(_ codec: any ImageCodec) {
        state.withLock { state in
            if state.codecs.updateValue(codec, forKey: codec.imageType) == nil {
                state.order.append(codec.imageType)
            }
            state.codecsChanged()
        }
    }

    /// Replaces the codec for `type` with what `body` makes of the current one (`nil` removes it).
    public func replaceCodec(for type: ImageType, using body: ((any ImageCodec)?) -> (any ImageCodec)?) {
        state.withLock { state in
            state.codecsChanged()
            let replacement = body(state.codecs[type])
            if let replacement {
                precondition(replacement.imageType == type, "a replacement codec must keep the image type")
                if state.codecs.updateValue(replacement, forKey: type) == nil { state.order.append(type) }
            } else if state.codecs.removeValue(forKey: type) != nil {
                state.order.removeAll { $0 == type }
            }
        }
    }

    /// Removes and returns the codec for `type`.
    @discardableResult
    public func removeCodec(for type: ImageType) -> (any ImageCodec)? {
        state.withLock { state in
            state.codecsChanged()
            state.order.removeAll { $0 == type }
            return state.codecs.removeValue(forKey: type)
        }
    }

    /// The `Accept` header a download sends unless its request sets its own: the media types of every format
    /// this catalogue decodes, in registration order. Nothing else is listed (no `image/*`), so a server that
    /// chooses the format by `Accept` never picks one the pipeline cannot decode.
    public var acceptHeaderValue: String {
        let (order, codecs, built, generation) = state.withLock {
            ($0.order, $0.codecs, $0.acceptHeader, $0.generation)
        }
        if let built { return built }
        // Built outside the lock: a codec's properties are its own code.
        let value = order.filter { codecs[$0]!.properties.contains(.decoding) }
            .compactMap(\.mimeType).joined(separator: ", ")
        state.withLock { state in
            if state.generation == generation { state.acceptHeader = value }
        }
        return value
    }

    public func properties(for type: ImageType) -> CodecProperties {
        codec(for: type)?.properties ?? []
    }

    /// The first registered type whose codec has `properties`.
    public func firstType(supporting properties: CodecProperties) -> ImageType? {
        let (order, codecs) = state.withLock { ($0.order, $0.codecs) }
        return order.first { codecs[$0]!.properties.isSuperset(of: properties) }
    }

    /// The type of `data`: magic numbers first, then every codec's own detector.
    ///
    /// Returns `nil` when nothing matches; when `isComplete` is `false` a detector that needs more data
    /// does not count as a match.
    public func detectType(of data: Data, isComplete: Bool) -> ImageType? {
        let (order, codecs) = state.withLock { ($0.order, $0.codecs) }
        if let type = ImageType.detect(magicNumbersOf: data.prefix(12)), let codec = codecs[type],
           codec.decoder.detect(data, isComplete: isComplete) != .noMatch {
            return type
        }
        return order.first { codecs[$0]!.decoder.detect(data, isComplete: isComplete) == .match }
    }

    /// Detects the format of complete `data` and decodes it at `target`.
    /// - Throws: ``ImageCodecError/unrecognizedFormat`` when no codec matches, else the decoder's error.
    public func decode(
        _ data: Data, target: TargetSizing = .original, configuration: DecoderConfiguration = .default
    ) throws -> DecodedImage {
        DelegateQueueDiagnostics.noteHeavyWork()
        guard !data.isEmpty else { throw ImageCodecError.truncated }
        guard let type = detectType(of: data, isComplete: true), let codec = codec(for: type) else {
            throw ImageCodecError.unrecognizedFormat
        }
        return try codec.decoder.decode(data, target: target, configuration: configuration)
    }

    /// Encodes `image` as `type`.
    /// - Throws: ``ImageCodecError/encodingFailed(_:)`` when `type` has no encoder here.
    public func encode(
        _ image: ImageContainer, as type: ImageType, options: EncodingOptions = [], quality: Double = 0.85
    ) throws -> Data {
        guard let encoder = codec(for: type)?.encoder else {
            throw ImageCodecError.encodingFailed("no encoder registered for \(type)")
        }
        return try encoder.encode(image, options: options, quality: quality)
    }
}
