import Foundation

/// The caches of every pipeline on a configuration, taken together as TIP's global limits are: how much each kind
/// may hold, how much it holds now, and clearing it everywhere.
extension GlobalConfiguration {
    /// TIP's default for all rendered caches: half of min(RAM / 12, 160 MB).
    public static let defaultMaxBytesForAllRenderedCaches: Int = {
        let physical = Int(clamping: ProcessInfo.processInfo.physicalMemory)
        return min(physical / 12, 160 << 20) / 2
    }()
    public static let defaultMaxBytesForAllMemoryCaches = 48 << 20
    public static let defaultMaxBytesForAllDiskCaches = 128 << 20
    public static let defaultMaxCountForAllRenderedCaches = 255
    public static let defaultMaxCountForAllMemoryCaches = 255
    public static let defaultMaxCountForAllDiskCaches = 2047
    public static let defaultMaxRatioSizeOfCacheEntry = 6

    // MARK: - Limits

    /// Most bytes all rendered caches hold together (decoded pixels).
    public var maxBytesForAllRenderedCaches: Int {
        get { renderedPool.limits.maxBytes }
        set { setLimit(renderedPool, \.maxBytes, newValue, default: Self.defaultMaxBytesForAllRenderedCaches) }
    }

    /// Most bytes all memory caches hold together (encoded image data and partial downloads).
    public var maxBytesForAllMemoryCaches: Int {
        get { memoryPool.limits.maxBytes }
        set { setLimit(memoryPool, \.maxBytes, newValue, default: Self.defaultMaxBytesForAllMemoryCaches) }
    }

    /// Most bytes all disk caches hold together (image files and partial downloads).
    public var maxBytesForAllDiskCaches: Int {
        get { diskPool.limits.maxBytes }
        set { setLimit(diskPool, \.maxBytes, newValue, default: Self.defaultMaxBytesForAllDiskCaches) }
    }

    /// Most entries all disk caches hold together; 0 = no count limit.
    public var maxCountForAllDiskCaches: Int {
        get { diskPool.limits.maxCount }
        set { setLimit(diskPool, \.maxCount, newValue, default: Self.defaultMaxCountForAllDiskCaches) }
    }

    /// Most entries (identifiers) all rendered caches hold together; 0 = no count limit.
    public var maxCountForAllRenderedCaches: Int {
        get { renderedPool.limits.maxCount }
        set { setLimit(renderedPool, \.maxCount, newValue, default: Self.defaultMaxCountForAllRenderedCaches) }
    }

    /// Most entries all memory caches hold together; 0 = no count limit.
    public var maxCountForAllMemoryCaches: Int {
        get { memoryPool.limits.maxCount }
        set { setLimit(memoryPool, \.maxCount, newValue, default: Self.defaultMaxCountForAllMemoryCaches) }
    }

    /// A single entry may use at most 1/N of its kind's byte limit; 0 or 1: no per-entry cap.
    public var maxRatioSizeOfCacheEntry: Int {
        get { memoryPool.limits.maxEntryRatio }
        set {
            let ratio = newValue < 0 ? Self.defaultMaxRatioSizeOfCacheEntry : newValue
            renderedPool.updateLimits { $0.maxEntryRatio = ratio }
            memoryPool.updateLimits { $0.maxEntryRatio = ratio }
            diskPool.updateLimits { $0.maxEntryRatio = ratio }
        }
    }

    // MARK: - Totals

    /// Bytes held by all rendered caches now.
    public var totalBytesForAllRenderedCaches: Int { renderedPool.totalBytes }
    /// Bytes held by all memory caches now.
    public var totalBytesForAllMemoryCaches: Int { memoryPool.totalBytes }
    /// Bytes held by all disk caches now.
    public var totalBytesForAllDiskCaches: Int { diskPool.totalBytes }
    /// Entries held by all disk caches now.
    public var totalCountForAllDiskCaches: Int { diskPool.totalCount }
    /// Entries held by all rendered caches now.
    public var totalCountForAllRenderedCaches: Int { renderedPool.totalCount }
    /// Entries held by all memory caches now.
    public var totalCountForAllMemoryCaches: Int { memoryPool.totalCount }

    // MARK: - Clearing

    /// Empties every pipeline's rendered cache.
    public func clearAllRenderedMemoryCaches() { renderedPool.removeAll() }

    /// Empties every pipeline's rendered and memory caches.
    public func clearAllMemoryCaches() {
        renderedPool.removeAll()
        memoryPool.removeAll()
    }

    /// Empties every pipeline's disk cache (and its rendition tables).
    public func clearAllDiskCaches() {
        diskPool.clearAll()
        for pipeline in pipelines { pipeline.renditionTables?.removeAll() }
    }

    /// Forgets every rendition of `identifier` in every pipeline.
    public func clearAllRenderedMemoryCacheImages(identifier: String) { renderedPool.removeEverywhere(key: identifier) }

    /// Marks every pipeline's renditions of `identifier` dirty: a later fetch shows them as a preview and
    /// reloads (TIP's `dirtyAllRenderedMemoryCacheImagesWithIdentifier:`).
    public func dirtyAllRenderedMemoryCacheImages(identifier: String) {
        for pipeline in pipelines { pipeline.caches.markRenderedDirty(identifier: identifier) }
    }

    private func setLimit(
        _ pool: some LimitedCachePool, _ field: WritableKeyPath<CacheLimits, Int> & Sendable, _ value: Int,
        default defaultValue: Int
    ) {
        let resolved = value < 0 ? defaultValue : value
        pool.updateLimits { $0[keyPath: field] = resolved }
    }
}
