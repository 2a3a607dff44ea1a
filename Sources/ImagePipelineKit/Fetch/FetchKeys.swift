import Foundation

/// Every key a fetch derives from its request, in one place: which rendition it asks the rendered cache for,
/// whether what it renders may be kept (in the rendered cache and in the rendition tables) and under which
/// name, and which decodes it may share. Worked out once, in ``FetchPlan``.
///
/// Which downloads a fetch shares is decided by the coordinator from the ``ImageDownloadRequest`` the plan
/// makes (URL, identifier, pipeline, headers and hydration key), since anyone may hand it requests.
struct FetchKeys: Sendable {
    let identifier: String
    let target: TargetSizing
    /// The transformer's identifier; `nil` without a transformer or for one that has none.
    let transformerIdentifier: String?
    /// What this fetch's rendered-cache lookups match on; `nil` when it never reads that cache: the memory
    /// source is not allowed, there is no identifier, no positive target with a scaling mode, or a transformer
    /// without an identifier (its output cannot be told from another transformer's).
    let renderedLookup: RenderedLookup?
    /// Whether images this fetch renders may be kept at all: it has a positive target with a scaling mode,
    /// and was not told to skip the rendered cache.
    private let keepsRenderedImages: Bool
    /// Whether this fetch's renditions go to the rendition tables: as for the rendered cache, and the request
    /// is not a placeholder and any transformer has an identifier.
    let keepsRenditions: Bool
    private let decoderConfiguration: DecoderConfiguration

    init(identifier: String, target: TargetSizing, sources: LoadingSources, options: FetchOptions,
         transformer: (any ImageTransformer)?, decoderConfiguration: DecoderConfiguration) {
        self.identifier = identifier
        self.target = target
        self.decoderConfiguration = decoderConfiguration
        transformerIdentifier = transformer?.identifier
        let transformerIsNamed = transformer == nil || transformer?.identifier != nil
        renderedLookup = sources.contains(.memoryCache) && !identifier.isEmpty && target.scalesToTarget && transformerIsNamed
            ? RenderedLookup(identifier: identifier, target: target, transformerIdentifier: transformer?.identifier)
            : nil
        keepsRenderedImages = target.scalesToTarget && !options.contains(.skipStoringToRenderedCache)
        keepsRenditions = keepsRenderedImages && !options.contains(.treatAsPlaceholder) && transformerIsNamed
    }

    /// Whether an image this fetch rendered may go into the rendered cache: never a placeholder, and an image
    /// changed by a transformer only when that transformer has an identifier to file it under.
    func mayKeepRendered(isPlaceholder: Bool, transformed: Bool) -> Bool {
        keepsRenderedImages && !isPlaceholder && (!transformed || transformerIdentifier != nil)
    }

    /// The transformer identifier a rendered image is filed under: the transformer's when it changed the image.
    func renderedTransformerIdentifier(transformed: Bool) -> String? {
        transformed ? transformerIdentifier : nil
    }

    /// The rendition-table name of this fetch's rendition of the cached image `source`; `nil` when it is never
    /// kept. A rendition is named by everything that makes its pixels (the cached image's URL, dimensions and
    /// byte count, the target, the transformer and whether orientation is applied), so a replaced image never
    /// matches an older rendition.
    func renditionKey(of source: CachedImageInfo) -> RenditionKey? {
        guard keepsRenditions, !source.isPlaceholder, let dimensions = target.dimensions else { return nil }
        let transformer = transformerIdentifier.map { "t" + $0 } ?? "-"
        let orientation = decoderConfiguration.appliesOrientation ? "o" : "r"
        return RenditionKey(
            identifier: identifier,
            variant: "\(source.url.absoluteString)|\(source.dimensions.width)x\(source.dimensions.height)|\(source.byteCount)|"
                + "\(dimensions.width)x\(dimensions.height)|\(target.contentMode.rawValue)|\(orientation)|\(transformer)")
    }

    /// The key under which fetches of equal bytes share one decode (the bytes themselves are compared too).
    func decodeKey(byteCount: Int) -> SharedDecodes.Key {
        SharedDecodes.Key(identifier: identifier, target: target, configuration: decoderConfiguration, byteCount: byteCount)
    }
}

/// What makes two prefetches one (``ImagePrefetcher`` runs one of each): the image and the rendition asked for.
struct PrefetchKey: Hashable, Sendable {
    var identifier: String
    var target: TargetSizing

    init(_ request: any FetchRequest) {
        identifier = request.resolvedIdentifier
        target = request.targetSizing
    }
}

/// What a rendered-cache lookup matches on: identifier, target sizing and transformer.
struct RenderedLookup: Hashable, Sendable {
    var identifier: String
    var target: TargetSizing
    var transformerIdentifier: String?
}

/// What a cache tier knows of a complete image without its bytes: enough to name its renditions.
struct CachedImageInfo: Sendable {
    var url: URL
    var dimensions: PixelSize
    var byteCount: Int
    var isPlaceholder: Bool
}

extension CachedImageInfo {
    init(_ image: CachedImageData) {
        self.init(url: image.url, dimensions: image.dimensions, byteCount: image.data.count, isPlaceholder: image.isPlaceholder)
    }
}
