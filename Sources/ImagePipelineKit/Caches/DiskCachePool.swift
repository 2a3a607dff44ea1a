import Foundation

/// Every pipeline's disk cache behind one lock, with the global disk limits, shared by all pipelines.
///
/// TIP serialises all disk caches on one queue; here one lock plays that part, so pruning after a write can
/// evict from other pipelines' caches atomically. Disk work is done while holding it — never call in from
/// the delegate queue.
final class DiskCachePool: LimitedCachePool, @unchecked Sendable {
    // @unchecked: every stored property here, and every DiskCache's index, pending touches and files, is
    // touched only while `lock` is held.
    // Recursive: pruning loads a weak cache reference under the lock, and if that turns out to be the last
    // reference, the cache's deinit (which takes the lock to give back its totals) runs right there.
    private let lock = NSRecursiveLock()
    private var currentLimits: CacheLimits
    private var caches: [String: WeakDiskCache] = [:]
    private var bytes: [String: Int] = [:]
    private var counts: [String: Int] = [:]
    /// Where corrupt entries and failed writes are reported.
    private let problems: ProblemRelay
    /// Files of entries deleted under the lock, already moved out of their entries' names, to unlink once the
    /// outermost hold ends. Unlinking frees a file's blocks (and trims them on a file system mounted with
    /// `discard`), which can take a millisecond that every disk cache of the process would wait for.
    private var removals: [(fileSystem: any CacheFileSystem, path: String)] = []
    /// How deeply the (recursive) lock is held by the thread holding it.
    private var holdDepth = 0

    private struct WeakDiskCache {
        weak var cache: DiskCache?
    }

    init(limits: CacheLimits, problems: ProblemRelay) {
        currentLimits = limits
        self.problems = problems
    }

    /// Runs `body` holding the disk lock (the only way to touch a disk cache's index or files, except a new
    /// entry's temp file, which only its writer knows).
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        holdDepth += 1
        defer {
            holdDepth -= 1
            var released: [(fileSystem: any CacheFileSystem, path: String)] = []
            if holdDepth == 0, !removals.isEmpty { swap(&released, &removals) }
            lock.unlock()
            for removal in released { removal.fileSystem.remove(removal.path) }
        }
        return try body()
    }

    /// Unlinks `path` (a file no entry names any more) after the lock is released.
    func _locked_removeAfterUnlock(_ path: String, fileSystem: any CacheFileSystem) {
        removals.append((fileSystem, path))
    }

    var limits: CacheLimits { withLock { currentLimits } }

    func updateLimits(_ body: @Sendable (inout CacheLimits) -> Void) {
        withLock {
            body(&currentLimits)
            _locked_prune(priority: nil)
        }
    }

    var totalBytes: Int { withLock { bytes.values.reduce(0, +) } }
    var totalCount: Int { withLock { counts.values.reduce(0, +) } }

    func _locked_limits() -> CacheLimits { currentLimits }

    func _locked_register(_ cache: DiskCache, owner: String, bytes: Int, count: Int) {
        caches[owner] = WeakDiskCache(cache: cache)
        self.bytes[owner] = bytes
        counts[owner] = count
    }

    /// A released disk cache gives back its totals (its files stay on disk for the next open).
    func _locked_unregister(owner: String) {
        caches[owner] = nil
        bytes[owner] = nil
        counts[owner] = nil
    }

    func _locked_adjust(owner: String, bytes delta: Int, count countDelta: Int) {
        bytes[owner, default: 0] += delta
        counts[owner, default: 0] += countDelta
    }

    func _locked_report(_ problem: ImagePipelineProblem) {
        problems.report(problem)
    }

    /// TIP's pruning rule: least recently used entries of the *other* pipelines go first, one per pipeline per
    /// round, then the written pipeline's own, until bytes and count are within the limits. Returns whether
    /// anything was evicted.
    @discardableResult
    func _locked_prune(priority: String?) -> Bool {
        func isOver() -> Bool {
            bytes.values.reduce(0, +) > currentLimits.maxBytes
                || (currentLimits.maxCount > 0 && counts.values.reduce(0, +) > currentLimits.maxCount)
        }
        var evicted = false
        while isOver() {
            var tookFromOthers = false
            for (owner, reference) in caches where owner != priority {
                guard let cache = reference.cache, cache._locked_evictLeastRecentlyUsed() else { continue }
                tookFromOthers = true
                evicted = true
                if !isOver() { return true }
            }
            if tookFromOthers { continue }
            guard let priority, let cache = caches[priority]?.cache, cache._locked_evictLeastRecentlyUsed() else { return evicted }
            evicted = true
        }
        return evicted
    }

    func clearAll() {
        withLock {
            for reference in caches.values { reference.cache?._locked_removeAll() }
        }
    }
}
