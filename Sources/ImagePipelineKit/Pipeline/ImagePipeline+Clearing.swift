import Foundation

extension ImagePipeline {
    /// Forgets `identifier` in the rendered, memory and disk caches (TIP's `clearImageWithIdentifier:`), and
    /// deletes it from the ``sharedCache`` in the background.
    public func clearImage(identifier: String) {
        caches.clear(identifier: identifier)
    }

    /// Marks the renditions of `identifier` dirty: a later fetch shows them as a preview and reloads.
    public func dirtyRenderedImage(identifier: String) {
        caches.markRenderedDirty(identifier: identifier)
    }

    /// Empties the rendered and memory caches.
    public func clearMemoryCaches() {
        caches.clearMemory()
    }

    /// Deletes every disk entry; once the pipeline is released its directory goes too, so
    /// ``knownIdentifiers(cacheRoot:)`` stops listing it (as TIP does).
    public func clearDiskCache() {
        caches.clearDisk()
    }

    /// Moves the cached image of `identifier` to `newIdentifier` on disk, then forgets `identifier` in every
    /// cache (TIP's `changeIdentifierForImageWithIdentifier:toIdentifier:`).
    /// - Throws: ``DiskCacheError`` (ENOENT when there is no disk entry to move; EINVAL without a disk cache).
    public func changeIdentifier(_ identifier: String, to newIdentifier: String) throws(DiskCacheError) {
        try caches.changeIdentifier(identifier, to: newIdentifier)
    }

    /// Copies the disk file of `identifier` to a temporary file, hands its URL to `body`, and deletes it when
    /// `body` returns (TIP's `copyDiskCacheFileWithIdentifier:completion:`).
    /// - Throws: ``DiskCacheError`` with ENOENT when the pipeline has no such complete entry.
    public func withCopyOfDiskCacheFile<T>(identifier: String, _ body: (URL) throws -> T) throws -> T {
        let copy = try caches.copyOfDiskFile(identifier: identifier)
        defer { try? FileManager.default.removeItem(at: copy) }
        return try body(copy)
    }
}
