import Foundation
import PipelineLocking

/// One representation of a negotiated resource: the bytes served when a request's `Accept` allows its type.
public struct OriginVariant: Sendable {
    /// The body.
    public var data: Data
    /// Its media type, e.g. `image/avif`; matched against `Accept` and sent as `Content-Type`.
    public var mediaType: String

    /// A variant of `mediaType` with body `data`.
    public init(_ data: Data, mediaType: String) {
        self.data = data
        self.mediaType = mediaType
    }
}

/// Resources served by content negotiation, as image CDNs do: one path, several encodings, and the
/// request's `Accept` header picks one.
///
/// The variants of a path are kept in the server's order of preference. A request gets the first one whose
/// media type its `Accept` lists with a non-zero quality (exactly, or through `image/*` or `*/*`); when
/// none is acceptable, or it sent no `Accept`, the last variant (the widely decodable fallback). Thread-safe.
final class OriginVariantTable: Sendable {
    private let table = Locked<[String: [OriginAsset]]>([:])

    func set(_ variants: [OriginAsset], at route: String) {
        table.withLock { $0[OriginRoutes.key(route)] = variants.isEmpty ? nil : variants }
    }

    /// The variant for a request of `path` (decoded) with `query` and the `Accept` value `accept`, or `nil`
    /// when the path is not negotiated.
    func asset(path: String, query: String?, accept: String?) -> OriginAsset? {
        let keys = [query.map { "\(path)?\($0)" }, path].compactMap { $0 }
        guard let variants = table.withLock({ state in keys.compactMap { state[$0] }.first }) else { return nil }
        let ranges = Self.mediaRanges(accept)
        return variants.first { Self.quality(of: $0.contentType, in: ranges) > 0 } ?? variants.last
    }

    /// The media ranges of `accept` with their qualities (1 unless `q=` says otherwise), lowercased.
    static func mediaRanges(_ accept: String?) -> [(range: String, quality: Double)] {
        guard let accept else { return [] }
        return accept.split(separator: ",").compactMap { item in
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let range = parts.first, !range.isEmpty else { return nil }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return (range, quality)
        }
    }

    /// The quality `ranges` give `mediaType`: the most specific matching range decides (RFC 9110 §12.5.1), so
    /// `image/avif;q=0, */*` refuses AVIF and accepts the rest; 0 when nothing matches.
    static func quality(of mediaType: String, in ranges: [(range: String, quality: Double)]) -> Double {
        let type = mediaType.lowercased()
        let family = type.split(separator: "/").first.map { "\($0)/*" } ?? ""
        for candidate in [type, family, "*/*"] {
            if let match = ranges.first(where: { $0.range == candidate }) { return match.quality }
        }
        return 0
    }
}
