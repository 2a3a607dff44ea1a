import Foundation

/// A pipeline's renditions kept across launches: decoded, scaled images in memory-mapped ``ImageTable``s, one
/// per size class, read before a cached image's bytes are decoded (Fast Image Cache's idea as a tier of the
/// pipeline).
///
/// Turned on with ``ImagePipeline/useRenditionTables(sides:capacity:)``. A fetch with a target size that finds
/// its image in the memory or disk cache first asks the tables for the rendition of *that* cached image at its
/// target; a hit is a view of the mapped pixels, with no file read and no decode. After a fetch decoded an image
/// from any source, its rendition goes into the smallest table whose side holds it.
///
/// An animation is not kept whole (its frames would fill a table); its first frame is, and a fetch of it shows
/// that frame at once (``FetchDelegate/fetchOperation(_:didLoadFirstAnimatedImageFrame:progress:)``) while the
/// animation decodes.
///
/// A rendition is named by everything that makes its pixels: the identifier, the cached image's URL,
/// dimensions and byte count, the target sizing, the transformer and the decoder's orientation setting. A
/// replaced or expired image therefore never matches an older rendition; clearing or storing an identifier
/// also forgets its renditions outright. Animated images, placeholders, untargeted and centred requests, and
/// images transformed by a transformer without an identifier are never kept.
///
/// The tables live in the pipeline's disk directory (`%renditions-<side>.table`). Their size is fixed by
/// `sides` and `capacity`, outside ``GlobalConfiguration``'s disk limits; least recently hit slots are reused.
public final class RenditionTables: Sendable {
    /// Table file names start with this; the disk cache leaves such files alone.
    static let fileNamePrefix = "%renditions-"

    /// The tables, smallest side first.
    public let tables: [ImageTable]

    /// Opens (creating) one table per side in `directory`.
    /// - Throws: ``ImageTableError`` when a table cannot be opened.
    init(directory: String, sides: [Int], capacity: Int) throws(ImageTableError) {
        var tables: [ImageTable] = []
        for side in Set(sides).sorted() {
            tables.append(try ImageTable(path: directory + "/" + Self.fileNamePrefix + "\(side).table", side: side,
                                         capacity: capacity))
        }
        self.tables = tables
    }

    /// The rendition named `key`, as a view of a table's pixels.
    func image(for key: RenditionKey) -> Bitmap? {
        for table in tables {
            if let bitmap = table.image(for: key.text) { return bitmap }
        }
        return nil
    }

    /// Keeps `bitmap` under `key` in the smallest table it fits. `false` when it fits none (or every slot of
    /// that table is held by a live view).
    @discardableResult
    func store(_ bitmap: Bitmap, key: RenditionKey) -> Bool {
        guard let table = tables.first(where: { $0.side >= max(bitmap.width, bitmap.height) }) else { return false }
        return table.store(bitmap, identifier: key.text)
    }

    /// Forgets every rendition of `identifier`.
    func removeRenditions(of identifier: String) {
        let prefix = RenditionKey.prefix(for: identifier)
        for table in tables { table.removeAll { $0.hasPrefix(prefix) } }
    }

    /// Forgets every rendition.
    func removeAll() {
        for table in tables { table.removeAll { _ in true } }
    }
}

/// The name of one rendition in ``RenditionTables``: the identifier (length-prefixed, so no identifier is a
/// prefix of another's names), then a description of everything else that decides the pixels. A fetch makes
/// its keys in one place (`FetchKeys`); the tables only compare them.
struct RenditionKey: Hashable, Sendable {
    let text: String

    /// The rendition of `identifier` that `variant` describes (source image, target, transformer, ...).
    init(identifier: String, variant: String) {
        text = Self.prefix(for: identifier) + variant
    }

    private init(text: String) { self.text = text }

    /// The key of the first frame of the animation this key names.
    var firstFrame: RenditionKey { RenditionKey(text: text + "|first-frame") }

    static func prefix(for identifier: String) -> String {
        "\(identifier.utf8.count):\(identifier)|"
    }
}
