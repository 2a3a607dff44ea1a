import Foundation

/// One rendition in the rendered cache: an image already decoded and scaled for some target.
public struct RenderedImage: Sendable {
    /// The image at its rendered size, shared by reference (a hit never copies pixels).
    public var image: ImageContainer {
        didSet { (dimensions, isAnimated) = (image.dimensions, image.isAnimated) }
    }
    /// `image.dimensions`, kept beside it: a lookup compares sizes without following the image's frames to
    /// its bitmap (two dependent memory loads per rendition, most of a hit's cost on a large cache).
    public private(set) var dimensions: PixelSize
    /// `image.isAnimated`, kept beside it for the same reason.
    public private(set) var isAnimated: Bool
    /// Identifier of the transformer that produced it, `nil` when untransformed.
    public var transformerIdentifier: String?
    /// Dimensions of the source it was rendered from.
    public var sourceDimensions: PixelSize
    /// Marked stale by ``RenderedCache/markDirty(identifier:)``: usable as a preview, not as a final image.
    public var isDirty: Bool
    /// The URL of the image it was rendered from. An identifier's renditions may come from different URLs
    /// (a preview of another size kept after its fetch stopped, say), and a hit reports this URL, not the one
    /// the later request asked for, as TIP does. `nil` for a rendition stored without one: a hit then reports
    /// the request's URL.
    public var url: URL?

    /// A rendition of `image`, rendered from the image at `url`, of `sourceDimensions`.
    public init(image: ImageContainer, transformerIdentifier: String? = nil, sourceDimensions: PixelSize, isDirty: Bool = false,
                url: URL? = nil) {
        self.image = image
        self.dimensions = image.dimensions
        self.isAnimated = image.isAnimated
        self.transformerIdentifier = transformerIdentifier
        self.sourceDimensions = sourceDimensions
        self.isDirty = isDirty
        self.url = url
    }

    /// Whether this rendition already is what `target` asks for: scaling it would change nothing. An animation
    /// smaller than the target also is, when it has its source's size: animations are never enlarged
    /// (``TargetSizing/scaledSize(ofAnimation:)``).
    func satisfies(_ target: TargetSizing) -> Bool {
        if target.isSatisfied(by: dimensions) { return true }
        return isAnimated && dimensions == target.scaledSize(ofAnimation: sourceDimensions)
    }
}

/// Up to three renditions of one identifier, most recent first; a fourth pushes out the oldest, as in TIP.
///
/// The most recent one is stored inline: a hit on it, the usual case, reads no array buffer (on a cache of
/// thousands of identifiers that is a cache miss saved on every lookup).
struct RenderedCollection: CacheCosting {
    static let maximumRenditions = 3
    private(set) var front: RenderedImage?
    private var others: [RenderedImage] = []
    /// Kept up to date on every change: the pool reads it before and after each hit, and summing
    /// `sizeInMemory` there cost more than the lookup itself.
    private(set) var cost = 0

    /// Every rendition, most recent first.
    var renditions: [RenderedImage] {
        get { front.map { [$0] + others } ?? [] }
        set {
            front = newValue.first
            others = Array(newValue.dropFirst())
            cost = newValue.reduce(0) { $0 + $1.image.sizeInMemory }
        }
    }

    /// The first rendition matching `predicate`, made the most recent.
    mutating func takeFirst(where predicate: (RenderedImage) -> Bool) -> RenderedImage? {
        guard let front else { return nil }
        if predicate(front) { return front }
        guard let index = others.firstIndex(where: predicate) else { return nil }
        let match = others.remove(at: index)
        others.insert(front, at: 0)
        self.front = match
        return match
    }

    /// Marks every rendition stale.
    mutating func markDirty() {
        front?.isDirty = true
        for index in others.indices { others[index].isDirty = true }
    }
}

/// The synchronous cache of decoded, scaled images of one pipeline (TIP's rendered cache).
///
/// Thread-safe and synchronous: a lookup is a dictionary access under the rendered kind's lock, so a fetch
/// started on the delegate queue can complete before it returns. Each identifier keeps at most three
/// renditions, keyed by target sizing and transformer identifier; a hit moves the rendition and its
/// identifier to the front. Placeholders are never stored. Every pipeline's rendered cache shares the
/// global rendered limits (``GlobalConfiguration``), cost = ``ImageContainer/sizeInMemory``.
public final class RenderedCache: Sendable {
    private let owner: CachePool<RenderedCollection>.Owner
    private let pool: CachePool<RenderedCollection>

    init(owner: String, pool: CachePool<RenderedCollection>) {
        self.owner = pool.register(name: owner)
        self.pool = pool
    }

    deinit {
        pool.unregister(owner)
    }

    /// The rendition of `identifier` that already is what `target` asks for, made of the same transformer.
    ///
    /// Only targets with positive dimensions and a scaling content mode are looked up (TIP: a center-mode
    /// or untargeted fetch always goes on to the memory cache). A hit becomes the most recent rendition.
    public func image(for identifier: String, target: TargetSizing, transformerIdentifier: String? = nil) -> RenderedImage? {
        guard target.scalesToTarget else { return nil }
        return pool.access(owner: owner, key: identifier) { (collection: inout RenderedCollection) -> RenderedImage? in
            collection.takeFirst { $0.transformerIdentifier == transformerIdentifier && $0.satisfies(target) }
        }
    }

    /// Keeps `rendition` for `identifier`, most recent first.
    ///
    /// Ignored for placeholders, for images with an empty side and for images over the per-entry cap. A
    /// rendition of the same size and transformer replaces the existing one unless that one is clean and
    /// was rendered from a source at least as large on both axes.
    public func store(_ rendition: RenderedImage, identifier: String, isPlaceholder: Bool = false) {
        guard !isPlaceholder, !rendition.image.dimensions.isEmpty,
              rendition.image.sizeInMemory <= pool.limits.maxEntryBytes else { return }
        pool.update(owner: owner, key: identifier) { current in
            var renditions = current?.renditions ?? []
            if let index = renditions.firstIndex(where: {
                $0.dimensions == rendition.dimensions && $0.transformerIdentifier == rendition.transformerIdentifier
            }) {
                let existing = renditions[index]
                if !existing.isDirty, existing.sourceDimensions.width >= rendition.sourceDimensions.width,
                   existing.sourceDimensions.height >= rendition.sourceDimensions.height {
                    return current
                }
                renditions.remove(at: index)
            }
            renditions.insert(rendition, at: 0)
            var collection = RenderedCollection()
            collection.renditions = Array(renditions.prefix(RenderedCollection.maximumRenditions))
            return collection
        }
    }

    /// Marks every rendition of `identifier` dirty: later lookups return them flagged, for a preview only.
    public func markDirty(identifier: String) {
        pool.modify(owner: owner, key: identifier) { collection in collection.markDirty() }
    }

    /// Forgets every rendition of `identifier`.
    public func clear(identifier: String) {
        pool.remove(owner: owner, key: identifier)
    }

    /// Forgets everything this pipeline rendered.
    public func clearAll() {
        pool.removeAll(owner: owner)
    }

    /// Identifiers with their renditions, most recently used first (for inspection).
    public var entries: [(identifier: String, renditions: [RenderedImage])] {
        pool.entries(owner: owner).map { ($0.key, $0.entry.renditions) }
    }

    /// Bytes this pipeline's rendered cache holds.
    public var totalBytes: Int { pool.bytes(owner: owner) }
}
