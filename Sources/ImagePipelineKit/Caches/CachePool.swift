import Synchronization
import PipelineLocking

/// Something a cache charges against its byte limit.
protocol CacheCosting: Sendable {
    /// Bytes this entry accounts for.
    var cost: Int { get }
}

/// Ceilings for the kind, with TIP's meaning: `maxBytes` 0 retains nothing; `maxCount` 0 is unlimited;
/// a `maxEntryRatio` of 0 or 1 puts no cap on one entry, N > 1 caps it at `maxBytes / N`.
struct CacheLimits: Sendable, Equatable {
    var maxBytes: Int
    var maxCount: Int
    var maxEntryRatio: Int

    /// The most one entry may cost.
    var maxEntryBytes: Int { maxEntryRatio > 1 ? maxBytes / maxEntryRatio : maxBytes }
}

/// A cache kind's pool of every pipeline's caches, whose limits can change while it runs.
protocol LimitedCachePool: AnyObject, Sendable {
    var limits: CacheLimits { get }
    /// Changes the limits and prunes to them.
    func updateLimits(_ body: @Sendable (inout CacheLimits) -> Void)
}

/// Every cache of one kind (rendered, or memory) across all pipelines, behind one lock.
///
/// One lock per kind, as TIP has one queue per kind: pruning after a write takes entries from *other*
/// pipelines first (TIP's global pruning rule), which is only atomic when every pipeline's list sits behind the
/// same lock. A cache hit holds the lock for a dictionary lookup and a list touch, nothing else.
final class CachePool<Entry: CacheCosting>: LimitedCachePool, Sendable {
    /// One pipeline's entries. A cache holds its `Owner` for its whole life, so a hit reaches its list without
    /// hashing the pipeline's name; the list itself is only touched under the pool's lock.
    final class Owner: @unchecked Sendable {
        // @unchecked: `list` is read and written only inside `state.withLock`.
        let name: String
        // Unchecked exclusivity: the pool's lock already serialises every access, and the runtime's dynamic
        // check (begin/end access on every hit) was a measurable share of a rendered-cache hit, which must
        // cost a few hundred nanoseconds at most.
        @exclusivity(unchecked) fileprivate var list = LRUList<String, Entry>()

        fileprivate init(name: String) { self.name = name }
    }

    private struct State: ~Copyable {
        var limits: CacheLimits
        var owners: [ObjectIdentifier: Owner] = [:]
        var totalBytes = 0
        var totalCount = 0

        var isOverLimits: Bool {
            totalBytes > limits.maxBytes || (limits.maxCount > 0 && totalCount > limits.maxCount)
        }

        mutating func removeTail(of owner: Owner) -> Entry? {
            guard let (_, entry) = owner.list.removeTail() else { return nil }
            totalBytes -= entry.cost
            totalCount -= 1
            return entry
        }

        /// TIP's pruning rule: one least-recently-used entry from every other owner per round, then the
        /// priority owner's own tail, until bytes and count are within the limits.
        mutating func prune(priority: Owner?) -> [Entry] {
            var evicted: [Entry] = []
            while isOverLimits {
                var tookFromOthers = false
                for owner in owners.values where owner !== priority {
                    if let entry = removeTail(of: owner) {
                        evicted.append(entry)
                        tookFromOthers = true
                        if !isOverLimits { return evicted }
                    }
                }
                if tookFromOthers { continue }
                guard let priority, let entry = removeTail(of: priority) else { break }
                evicted.append(entry)
            }
            return evicted
        }
    }

    private let state: Locked<State>
    /// Whether ``update(owner:key:_:)`` refuses entries over ``CacheLimits/maxEntryBytes``. The rendered cache
    /// checks single renditions itself, since one of its entries holds up to three.
    private let capsEntries: Bool

    init(limits: CacheLimits, capsEntries: Bool = true) {
        state = Locked(State(limits: limits))
        self.capsEntries = capsEntries
    }

    var limits: CacheLimits {
        get { state.withLock { $0.limits } }
    }

    /// Changes the limits and prunes down to them (least recently used first, all owners alike).
    func updateLimits(_ body: @Sendable (inout CacheLimits) -> Void) {
        let evicted = state.withLock { state in
            body(&state.limits)
            return state.prune(priority: nil)
        }
        _ = evicted   // released outside the lock
    }

    var totalBytes: Int { state.withLock { $0.totalBytes } }
    var totalCount: Int { state.withLock { $0.totalCount } }

    /// A new, empty owner (one pipeline's cache of this kind). ``unregister(_:)`` gives its entries back.
    func register(name: String) -> Owner {
        let owner = Owner(name: name)
        state.withLock { $0.owners[ObjectIdentifier(owner)] = owner }
        return owner
    }

    /// Removes `owner` and its entries (a released pipeline gives back its totals).
    func unregister(_ owner: Owner) {
        removeAll(owner: owner)
        state.withLock { _ = $0.owners.removeValue(forKey: ObjectIdentifier(owner)) }
    }

    /// The entry for `key`, made most recently used when `touch` is true.
    func entry(owner: Owner, key: String, touch: Bool = true) -> Entry? {
        state.withLock { _ in owner.list.value(for: key, touch: touch) }
    }

    /// Replaces the entry for `key` with what `body` makes of the current one (`nil` removes it), puts it at
    /// the head, and prunes with `owner` as the priority cache. An entry over the per-entry cap or a
    /// zero-byte limit is not stored. Returns what `body` decided and whether it was stored.
    @discardableResult
    func update(owner: Owner, key: String, _ body: (Entry?) -> Entry?) -> (entry: Entry?, stored: Bool) {
        var released: [Entry] = []
        defer { _ = released }   // deinit of evicted values (bitmaps) happens outside the lock
        return state.withLock { state in
            let current = owner.list.peek(key)
            let replacement = body(current)
            if let current {
                owner.list.remove(key)
                state.totalBytes -= current.cost
                state.totalCount -= 1
                released.append(current)
            }
            guard let replacement else { return (nil, false) }
            guard !capsEntries || replacement.cost <= state.limits.maxEntryBytes, state.limits.maxBytes > 0 else {
                return (replacement, false)
            }
            owner.list.insertAtHead(key, replacement)
            state.totalBytes += replacement.cost
            state.totalCount += 1
            released += state.prune(priority: owner)
            let stillThere = owner.list.peek(key) != nil
            return (replacement, stillThere)
        }
    }

    /// Runs `body` on the entry for `key` in place (its cost may change; totals follow) and, when `body`
    /// returns a value, makes the entry most recently used. `nil` when there is no entry or `body` says so.
    func access<R: Sendable>(owner: Owner, key: String, _ body: @Sendable (inout Entry) -> R?) -> R? {
        state.withLock { state in
            var delta = 0
            // One hash, of the key: this is the hit path of every synchronous lookup.
            let result = owner.list.access(key) { entry -> R? in
                let before = entry.cost
                defer { delta = entry.cost - before }
                return body(&entry)
            }
            state.totalBytes += delta
            return result
        }
    }

    /// Changes an entry in place, keeping its position; its cost may change (totals follow).
    func modify(owner: Owner, key: String, _ body: @Sendable (inout Entry) -> Void) {
        state.withLock { state in Self.modify(key, of: owner, in: &state, body) }
    }

    /// Changes every entry of `owner` in place (dirty marks, say).
    func modifyAll(owner: Owner, _ body: @Sendable (inout Entry) -> Void) {
        state.withLock { state in
            for key in owner.list.keysFromHead { Self.modify(key, of: owner, in: &state, body) }
        }
    }

    private static func modify(_ key: String, of owner: Owner, in state: inout State, _ body: (inout Entry) -> Void) {
        var delta = 0
        owner.list.update(key) { entry in
            let before = entry.cost
            body(&entry)
            delta = entry.cost - before
        }
        state.totalBytes += delta
    }

    @discardableResult
    func remove(owner: Owner, key: String) -> Entry? {
        state.withLock { state in
            guard let entry = owner.list.remove(key) else { return nil }
            state.totalBytes -= entry.cost
            state.totalCount -= 1
            return entry
        }
    }

    /// Removes every entry of `owner` (a cleared pipeline gives back its totals).
    func removeAll(owner: Owner) {
        let released = state.withLock { state -> LRUList<String, Entry> in
            let list = owner.list
            owner.list = LRUList()
            for entry in list.values { state.totalBytes -= entry.cost }
            state.totalCount -= list.count
            return list
        }
        _ = released   // deinit of the values (bitmaps) happens outside the lock
    }

    /// Removes `key` from every owner's cache.
    func removeEverywhere(key: String) {
        state.withLock { state in
            for owner in state.owners.values {
                if let entry = owner.list.remove(key) {
                    state.totalBytes -= entry.cost
                    state.totalCount -= 1
                }
            }
        }
    }

    func removeAll() {
        let released = state.withLock { state -> [LRUList<String, Entry>] in
            defer {
                state.totalBytes = 0
                state.totalCount = 0
            }
            return state.owners.values.map { owner in
                defer { owner.list = LRUList() }
                return owner.list
            }
        }
        _ = released
    }

    /// `owner`'s entries from most to least recently used.
    func entries(owner: Owner) -> [(key: String, entry: Entry)] {
        state.withLock { _ in
            owner.list.keysFromHead.map { ($0, owner.list.peek($0)!) }
        }
    }

    /// Names of the owners that hold at least one entry.
    var owners: [String] { state.withLock { $0.owners.values.filter { !$0.list.isEmpty }.map(\.name) } }

    /// Bytes held by `owner`.
    func bytes(owner: Owner) -> Int {
        state.withLock { _ in owner.list.values.reduce(0) { $0 + $1.cost } }
    }
}
