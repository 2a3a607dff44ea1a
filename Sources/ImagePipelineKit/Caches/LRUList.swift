/// Entries by key in least-recently-used order, with O(1) lookup, touch, insert and removal.
///
/// A value type over a dictionary of slots linked by key; not thread-safe on its own (its owner's lock
/// guards it). The head is the most recently used entry, the tail the next to evict.
struct LRUList<Key: Hashable, Value> {
    private struct Slot {
        var value: Value
        var newer: Key?
        var older: Key?
    }

    private var slots: [Key: Slot] = [:]
    private(set) var head: Key?
    private(set) var tail: Key?

    var count: Int { slots.count }
    var isEmpty: Bool { slots.isEmpty }

    /// The value for `key` without changing its position.
    func peek(_ key: Key) -> Value? { slots[key]?.value }

    /// The value for `key`, moved to the head when `touch` is true.
    mutating func value(for key: Key, touch: Bool) -> Value? {
        guard let slot = slots[key] else { return nil }
        if touch { moveToHead(key) }
        return slot.value
    }

    /// Changes the value of an existing entry in place (position unchanged). Returns false when absent.
    @discardableResult
    mutating func update(_ key: Key, _ body: (inout Value) -> Void) -> Bool {
        guard slots[key] != nil else { return false }
        body(&slots[key]!.value)
        return true
    }

    /// Inserts or replaces `value` for `key` at the head; returns the replaced value.
    @discardableResult
    mutating func insertAtHead(_ key: Key, _ value: Value) -> Value? {
        let old = remove(key)
        slots[key] = Slot(value: value, newer: nil, older: head)
        if let head { slots[head]!.newer = key }
        head = key
        if tail == nil { tail = key }
        return old
    }

    /// Removes and returns the value for `key`.
    @discardableResult
    mutating func remove(_ key: Key) -> Value? {
        guard let slot = slots.removeValue(forKey: key) else { return nil }
        if let newer = slot.newer { slots[newer]!.older = slot.older } else { head = slot.older }
        if let older = slot.older { slots[older]!.newer = slot.newer } else { tail = slot.newer }
        return slot.value
    }

    /// Removes and returns the least recently used entry.
    mutating func removeTail() -> (key: Key, value: Value)? {
        guard let tail, let value = remove(tail) else { return nil }
        return (tail, value)
    }

    mutating func moveToHead(_ key: Key) {
        guard head != key, let value = remove(key) else { return }
        insertAtHead(key, value)
    }

    mutating func removeAll() {
        slots.removeAll()
        head = nil
        tail = nil
    }

    /// Keys from most to least recently used.
    var keysFromHead: [Key] {
        var keys: [Key] = []
        keys.reserveCapacity(slots.count)
        var cursor = head
        while let key = cursor {
            keys.append(key)
            cursor = slots[key]!.older
        }
        return keys
    }

    /// Values in no particular order.
    var values: some Collection<Value> { slots.values.lazy.map(\.value) }
}
