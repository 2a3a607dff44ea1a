import Crypto
import Foundation
import ImagePipelineKit

/// Rendered answers, encoded, in memory and on disk: the result storage that makes a repeated thumbnail a
/// cache read.
///
/// The bytes live in a pipeline of their own (`results`): its memory cache and its disk cache, under the same
/// byte and count limits as every other pipeline (``GlobalConfiguration``), and on disk shared with every
/// process that opens the same cache directory. An entry's key is a digest of the canonical rendering (source,
/// every option, the negotiated format); its `ETag` and `Last-Modified` are kept in the entry's HTTP metadata.
final class ResultCache: Sendable {
    /// A cached or freshly rendered answer.
    struct Entry: Sendable {
        var data: Data
        var format: OutputFormat
        var dimensions: PixelSize
        /// A strong validator: a digest of the bytes.
        var entityTag: String
        /// When the answer was rendered, as an HTTP date.
        var lastModified: String
    }

    /// Where a lookup found its entry.
    enum Tier: String, Sendable { case memory, disk }

    private let store: ImagePipeline
    private let timeToLive: TimeInterval

    init(store: ImagePipeline, timeToLive: TimeInterval) {
        self.store = store
        self.timeToLive = timeToLive
    }

    /// The cache key of a rendering: a hex SHA-256 of its canonical description.
    static func key(for canonical: String) -> String {
        hex(SHA256.hash(data: Data(canonical.utf8)))
    }

    func entry(for key: String) -> (Entry, Tier)? {
        if let entry = memoryEntry(for: key) { return (entry, .memory) }
        guard let cached = store.diskCache?.entry(for: key)?.complete, let entry = Self.entry(cached) else { return nil }
        store.memoryCache.storeComplete(cached, identifier: key)
        return (entry, .disk)
    }

    /// The entry when memory holds it: no file is read.
    func memoryEntry(for key: String) -> Entry? {
        store.memoryCache.entry(for: key)?.complete.flatMap(Self.entry)
    }

    /// Whether the disk holds an entry for `key`, by the disk cache's index alone (no file is read).
    func isOnDisk(_ key: String) -> Bool {
        store.diskCache?.completeEntryInfo(for: key) != nil
    }

    /// Keeps `data` as `key`'s answer; returns the entry with its validators.
    func store(_ data: Data, format: OutputFormat, dimensions: PixelSize, source: URL, key: String) -> Entry {
        let digest = Self.hex(SHA256.hash(data: data).prefix(16))
        let entry = Entry(data: data, format: format, dimensions: dimensions, entityTag: "\"\(digest)\"",
                          lastModified: HTTPDate.format(Date()))
        let cached = CachedImageData(
            data: data, url: source, dimensions: dimensions, timeToLive: timeToLive,
            httpMetadata: HTTPCacheMetadata(entityTag: entry.entityTag, lastModified: entry.lastModified))
        store.memoryCache.storeComplete(cached, identifier: key, forced: true)
        store.diskCache?.storeComplete(cached, identifier: key, forced: true)
        return entry
    }

    /// Lowercase hex of `bytes` (String(format:) per byte costs more than the hash on a cache hit).
    private static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func entry(_ cached: CachedImageData) -> Entry? {
        guard let metadata = cached.httpMetadata, let entityTag = metadata.entityTag, let lastModified = metadata.lastModified,
              let format = ImageType.detect(magicNumbersOf: cached.data).flatMap(OutputFormat.init)
        else { return nil }
        return Entry(data: cached.data, format: format, dimensions: cached.dimensions, entityTag: entityTag,
                     lastModified: lastModified)
    }
}
