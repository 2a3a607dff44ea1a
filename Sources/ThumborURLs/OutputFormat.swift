import Foundation
import ImagePipelineKit

/// A format the service can be asked to answer in, and the encoder behind it.
public enum OutputFormat: String, Hashable, Sendable, CaseIterable {
    case jpeg, png, webp, avif, gif

    /// The `Content-Type` of an answer in this format.
    public var mediaType: String { "image/\(rawValue)" }

    /// The encoder this machine has for the format: `nil` for GIF, which this package decodes but does not
    /// encode, and for AVIF where libavif is missing or has no AV1 encoder
    /// (``ServiceError/unsupportedOutputFormat(_:)``, a 415, when `format()` asks for them).
    public var encoder: (any ImageEncoder)? {
        switch self {
        case .jpeg: JPEGEncoder()
        case .png: PNGEncoder()
        case .webp: WebPEncoder()
        case .avif: AVIFCodec().encoder
        case .gif: nil
        }
    }

    /// Whether ``encoder`` exists.
    public var isEncodable: Bool { encoder != nil }

    /// The format a request gets when its URL names none: AVIF when the client's `Accept` lists `image/avif` and
    /// this machine can encode it, then WebP when it lists `image/webp`, otherwise the source's own format when it
    /// can be encoded, otherwise PNG for a source with transparency and JPEG for one without.
    public static func negotiated(accept: String?, sourceType: ImageType?, hasTransparency: Bool) -> OutputFormat {
        let accepted = acceptedMediaTypes(accept)
        if let preferred = preferredNewer(accepting: accepted) { return preferred }
        switch sourceType {
        case .jpeg?: return .jpeg
        case .png?: return .png
        case .webp?: return accepted.contains("image/webp") ? .webp : (hasTransparency ? .png : .jpeg)
        default: return hasTransparency ? .png : .jpeg
        }
    }

    /// The format of an image type, when the service can be asked for it.
    public init?(_ type: ImageType) {
        switch type {
        case .jpeg: self = .jpeg
        case .png: self = .png
        case .webp: self = .webp
        case .avif: self = .avif
        case .gif: self = .gif
        default: return nil
        }
    }

    /// The newer formats `Accept` can choose without `format()`, the preferred first.
    public static let newerFormats: [OutputFormat] = [.avif, .webp]

    /// The newer format a client that accepts `accepted` (``acceptedMediaTypes(_:)``) gets without `format()`:
    /// the first of ``newerFormats`` that can be encoded here and that it lists; `nil` when it lists neither.
    public static func preferredNewer(accepting accepted: Set<String>) -> OutputFormat? {
        newerFormats.first { $0.isEncodable && accepted.contains($0.mediaType) }
    }

    /// The media types an `Accept` value names with a quality above zero (wildcards aside: `*/*` and
    /// `image/*` say nothing about which newer formats a client decodes).
    public static func acceptedMediaTypes(_ accept: String?) -> Set<String> {
        guard let accept else { return [] }
        var types: Set<String> = []
        for item in accept.split(separator: ",") {
            let parameters = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let type = parameters.first, !type.isEmpty else { continue }
            let refused = parameters.dropFirst().contains { $0 == "q=0" || $0 == "q=0.0" || $0 == "q=0.00" || $0 == "q=0.000" }
            if !refused { types.insert(type) }
        }
        return types
    }
}
