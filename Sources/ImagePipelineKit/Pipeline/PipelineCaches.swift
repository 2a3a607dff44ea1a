import Foundation
import PipelineLocking

/// The caches of one pipeline seen as one: the rendered cache, the memory cache, the disk cache, the rendition
/// tables and the fleet's shared cache. It owns how an image found in one tier, downloaded or stored percolates
/// into the others (the faster caches get it first, the disk and the fleet last), and how stores and clears
/// reach every tier. Fetches, store operations, clearing and inspection go through here, and nothing else in
/// the library touches a tier: `rendered`, `memory`, `disk` and `renditionTables` are read elsewhere only by
/// ``ImagePipeline``'s public accessors of the same caches. The caches themselves know nothing of fetches.
///
/// Thread-safe; the disk tier does I/O, so none of it runs on a delegate queue but the rendered lookups. The
/// fleet's calls run in tasks of their own, bounded by its timeout.
final class PipelineCaches: Sendable {
    /// A tier a fetch reads encoded bytes from, in order.
    enum Tier: Sendable {
        case memory, disk
    }

    let rendered: RenderedCache
    let memory: MemoryCache
    /// Opens the disk cache, and opens it again later when it could not.
    let diskOpener: DiskCacheOpener
    private let tables = Locked<RenditionTables?>(nil)
    /// The fleet's shared cache, with this pipeline's way into it; `nil` unless ``ImagePipeline/sharedCache`` is set.
    private let fleet = Locked<SharedCacheAccess?>(nil)

    init(rendered: RenderedCache, memory: MemoryCache, disk: DiskCacheOpener) {
        self.rendered = rendered
        self.memory = memory
        diskOpener = disk
    }

    /// `nil` while the pipeline's directory or index cannot be opened.
    var disk: DiskCache? { diskOpener.cache }

    /// Why the disk tier is off, or `nil` when it is open (asking tries to open it again when it is due).
    var diskUnavailability: DiskCacheError? {
        _ = disk
        return diskOpener.unavailability
    }

    /// Decoded renditions kept on disk; `nil` until ``useRenditionTables(_:)``.
    var renditionTables: RenditionTables? { tables.withLock { $0 } }

    func useRenditionTables(_ renditionTables: RenditionTables) {
        tables.withLock { $0 = renditionTables }
    }

    /// The fleet's shared cache, when one is set.
    var sharedCache: SharedCacheAccess? { fleet.withLock { $0 } }

    func useSharedCache(_ access: SharedCacheAccess?) {
        fleet.withLock { $0 = access }
    }

    // MARK: - Reading

    /// Whether this pipeline has `tier`.
    func has(_ tier: Tier) -> Bool {
        tier == .memory || disk != nil
    }

    /// The unexpired entry (complete image and partial) of `identifier` in `tier`.
    func entry(in tier: Tier, identifier: String) -> CacheEntry? {
        switch tier {
        case .memory: memory.entry(for: identifier)
        case .disk: disk?.entry(for: identifier)
        }
    }

    /// What the disk index says of `identifier`'s complete image, without reading its file.
    func diskImageInfo(identifier: String) -> CachedImageInfo? {
        disk?.completeEntryInfo(for: identifier).map {
            CachedImageInfo(url: $0.url, dimensions: $0.dimensions, byteCount: $0.bytes, isPlaceholder: $0.isPlaceholder)
        }
    }

    /// The rendition `lookup` names, when the rendered cache has it.
    func renderedImage(_ lookup: RenderedLookup) -> RenderedImage? {
        rendered.image(for: lookup.identifier, target: lookup.target, transformerIdentifier: lookup.transformerIdentifier)
    }

    /// The rendition-table view named `key`.
    func rendition(_ key: RenditionKey) -> Bitmap? {
        renditionTables?.image(for: key)
    }

    /// Whether decoded renditions are kept in rendition tables.
    var keepsRenditionTables: Bool { renditionTables != nil }

    /// The disk image of `identifier` without refreshing its recency or expiry: how another pipeline's disk is
    /// read when it lends an image.
    func peekOnDisk(identifier: String) -> CachedImageData? {
        disk?.peek(identifier: identifier)
    }

    /// The URL and response metadata of `identifier`'s unexpired disk image, from the index alone: what the HTTP
    /// freshness check reads before the file.
    func diskImageMetadata(identifier: String, now: Date) -> (url: URL, metadata: HTTPCacheMetadata?)? {
        disk?.completeEntryMetadata(for: identifier, now: now)
    }

    /// `identifier`'s image in the fleet's shared cache, or its fill lease (see
    /// ``SharedCacheAccess/lookUp(_:url:mayDownload:isCancelled:)``); `nil` without a shared cache.
    func lookUpShared(identifier: String, url: URL, mayDownload: Bool,
                      isCancelled: @escaping @Sendable () -> Bool) async -> SharedCacheFill? {
        guard let fleet = sharedCache else { return nil }
        return await fleet.lookUp(identifier, url: url, mayDownload: mayDownload, isCancelled: isCancelled)
    }

    /// Everything the tiers hold now, for ``ImagePipeline/inspect()``: reads the disk index, no image bytes.
    func contents() -> (rendered: [(identifier: String, renditions: [RenderedImage])],
                        memory: [(identifier: String, entry: CacheEntry)], disk: [DiskCacheEntryInfo]) {
        (rendered.entries, memory.entries, disk?.entries ?? [])
    }

    // MARK: - Percolation

    /// A complete image read from `tier` was decoded: a disk image goes into memory too, so that the next fetch
    /// finds it there.
    func percolate(_ image: CachedImageData, readFrom tier: Tier, identifier: String) {
        if tier == .disk { memory.storeComplete(image, identifier: identifier) }
    }

    /// Cached bytes in `tier` did not decode: the entry goes, so that a fetch can replace it.
    func forgetUndecodable(identifier: String, in tier: Tier) {
        switch tier {
        case .memory: memory.clear(identifier: identifier)
        case .disk: disk?.remove(identifier: identifier)
        }
    }

    /// The fleet's bytes of `identifier` did not decode: they go (in the background), so that a download replaces
    /// them.
    func forgetUndecodableShared(identifier: String) {
        sharedCache?.remove(identifier: identifier)
    }

    /// Keeps a rendered image for `identifier`.
    func keepRendered(_ rendition: RenderedImage, identifier: String) {
        rendered.store(rendition, identifier: identifier)
    }

    /// Keeps `bitmap` in the rendition tables under `key` (a no-op without tables).
    func keepRendition(_ bitmap: Bitmap, key: RenditionKey) {
        renditionTables?.store(bitmap, key: key)
    }

    /// Another live pipeline's disk image of the same identifier and URL, copied into this pipeline's disk
    /// and read back from there (`nil` when this pipeline has no disk or the copy did not take).
    func copyFromOtherPipeline(_ image: CachedImageData, identifier: String) -> CachedImageData? {
        guard let disk else { return nil }
        disk.storeComplete(image, identifier: identifier, forced: !image.isPlaceholder)
        guard let stored = disk.entry(for: identifier)?.complete, stored.url == image.url else { return nil }
        return stored
    }

    /// A freshly downloaded image, in memory at once (before the delegate hears of it, so that a fetch started
    /// from the callback finds it); its renditions of older bytes go, and so does the partial it completes.
    /// Returns whether memory took it; ``writeDownloadedToDisk(_:identifier:replacesSameURL:)`` follows after delivery.
    /// `replacesSameURL` as for ``MemoryCache/storeComplete(_:identifier:forced:replacesSameURL:)``.
    func keepDownloaded(_ image: CachedImageData, identifier: String, replacesSameURL: Bool = false) -> Bool {
        // A changed image can come back with the same URL, size and length: renditions of the old bytes go.
        renditionTables?.removeRenditions(of: identifier)
        let inMemory = memory.storeComplete(image, identifier: identifier, replacesSameURL: replacesSameURL)
        memory.removePartial(identifier: identifier)
        return inMemory
    }

    /// The disk write of a downloaded image, done once its final callback is on its way, so it never delays the image.
    func writeDownloadedToDisk(_ image: CachedImageData, identifier: String, replacesSameURL: Bool = false) -> Bool {
        disk?.storeComplete(image, identifier: identifier, replacesSameURL: replacesSameURL) ?? false
    }

    /// A download that must not be stored on disk (`no-store`) removes the disk image of the same URL it
    /// supersedes. Returns `false`: the image is not on disk.
    func forgetOnDisk(identifier: String, url: URL) -> Bool {
        if let disk, disk.completeEntryMetadata(for: identifier)?.url == url { disk.remove(identifier: identifier) }
        return false
    }

    /// The last row of a download's percolation: its bytes go to the fleet's shared cache (in the background,
    /// unless larger than the fleet takes), and `lease`, the fill lease its fetch held, is given back once they
    /// are there. Placeholders stay in the process.
    func writeThroughToFleet(_ image: CachedImageData, identifier: String, type: ImageType?,
                             releasing lease: SharedCacheLease?) {
        guard let fleet = sharedCache else { return }
        guard !image.isPlaceholder else {
            if let lease { fleet.release(lease) }
            return
        }
        let value = SharedCacheValue(data: image.data, url: image.url, dimensions: image.dimensions,
                                     contentType: type?.mimeType, isAnimated: image.isAnimated,
                                     eTag: image.httpMetadata?.entityTag, lastModified: image.httpMetadata?.lastModified,
                                     timeToLive: image.timeToLive)
        fleet.writeThrough(value, key: fleet.key(for: identifier), releasing: lease)
    }

    /// Gives a fill lease back without writing (its fetch ended without an image to share), in the background.
    func releaseSharedLease(_ lease: SharedCacheLease) {
        sharedCache?.release(lease)
    }

    /// The bytes of a download that stopped early, kept in memory and on disk for the next fetch to resume.
    func keepPartial(_ partial: PartialImageData, identifier: String) {
        memory.storePartial(partial, identifier: identifier)
        disk?.storePartial(partial, identifier: identifier)
    }

    /// The origin confirmed the disk image of `identifier` with a `304`: its response metadata is refreshed.
    func refreshOnDisk(_ metadata: HTTPCacheMetadata, identifier: String, url: URL, now: Date) {
        _ = disk?.refreshMetadata(metadata, identifier: identifier, url: url, now: now)
    }

    // MARK: - Stores and clears

    /// Forgets the renditions of `identifier` in the rendered cache: the image is being replaced.
    func forgetRendered(identifier: String) {
        rendered.clear(identifier: identifier)
    }

    /// Marks the renditions of `identifier` dirty: shown as a preview, then reloaded.
    func markRenderedDirty(identifier: String) {
        rendered.markDirty(identifier: identifier)
    }

    /// Moves `identifier`'s disk image to `newIdentifier`, then forgets both in the faster tiers.
    /// - Throws: ``DiskCacheError`` (ENOENT when there is no disk entry to move; EINVAL without a disk cache).
    func changeIdentifier(_ identifier: String, to newIdentifier: String) throws(DiskCacheError) {
        guard let disk else { throw .file(operation: "move", errno: EINVAL) }
        try disk.changeIdentifier(identifier, to: newIdentifier)
        forgetInMemory(identifier: identifier)
        forgetInMemory(identifier: newIdentifier)
    }

    /// A temporary copy of `identifier`'s disk file, which the caller deletes.
    /// - Throws: ``DiskCacheError`` with ENOENT when there is no disk cache or no such complete entry.
    func copyOfDiskFile(identifier: String) throws(DiskCacheError) -> URL {
        guard let disk else { throw .file(operation: "copy", errno: ENOENT) }
        return try disk.copyFile(identifier: identifier)
    }

    /// A store operation's image replaces whatever `identifier` had: on disk, and in memory when
    /// `inMemory` (otherwise memory forgets it); every rendition of the old image goes. `forced` replaces even
    /// an entry the usual rules would keep. Once memory or disk holds it, it replaces what the fleet has under the
    /// identifier too (not a placeholder). Returns whether memory or disk now holds it.
    func store(_ image: CachedImageData, identifier: String, inMemory: Bool, forced: Bool) -> Bool {
        rendered.clear(identifier: identifier)
        renditionTables?.removeRenditions(of: identifier)
        let onDisk = disk?.storeComplete(image, identifier: identifier, forced: forced) ?? false
        let stored: Bool
        if inMemory {
            stored = memory.storeComplete(image, identifier: identifier, forced: forced) || onDisk
        } else {
            memory.clear(identifier: identifier)
            stored = onDisk
        }
        // The bytes' type is read only for a fleet to write to.
        if stored, sharedCache != nil {
            writeThroughToFleet(image, identifier: identifier, type: ImageType.detect(magicNumbersOf: image.data), releasing: nil)
        }
        return stored
    }

    /// Forgets `identifier` in every tier, the fleet's shared cache included (in the background).
    func clear(identifier: String) {
        forgetInMemory(identifier: identifier)
        disk?.remove(identifier: identifier)
        sharedCache?.remove(identifier: identifier)
    }

    /// Forgets `identifier` in the rendered and memory caches and the rendition tables (not on disk).
    func forgetInMemory(identifier: String) {
        rendered.clear(identifier: identifier)
        memory.clear(identifier: identifier)
        renditionTables?.removeRenditions(of: identifier)
    }

    /// Empties the rendered and memory caches.
    func clearMemory() {
        rendered.clearAll()
        memory.clearAll()
    }

    /// Deletes every disk entry and rendition; once the pipeline is released, its emptied directory goes too.
    func clearDisk() {
        disk?.removeAll()
        disk?.removesDirectoryWhenReleasedEmpty = true
        renditionTables?.removeAll()
    }
}
