/// Entries by key in least-recently-used order, with O(1) lookup, touch, insert and removal.
///
/// A value type: a dictionary from key to a slot in a dense array of nodes, the nodes linked by array index.
/// A hit hashes its key once; moving a node to the head only rewrites indices (the previous design linked
/// nodes by key and hashed the key a dozen times per touch, which measured 8x a bare dictionary). The links
/// live in an array of their own, eight bytes per entry: a move rewrites both neighbours' links, and with
/// random keys those sat in two random nodes (two cache misses per hit); packed apart, 10k entries' links take
/// 80 KB and stay in the CPU's cache. Removal fills the hole with the last node, so the arrays never have gaps.
/// Not thread-safe on its own: its owner's lock guards it. The head is the most recently used entry, the tail the next to evict.
struct LRUList<Key: Hashable, Value> {
    private struct Node {
        var key: Key
        var value: Value
    }

    /// A node's neighbours by slot (`none` at the ends). Int32: a cache never holds two billion entries.
    private struct Link {
        var newer: Int32
        var older: Int32
    }

    private static var none: Int { -1 }
    private static var noLink: Int32 { -1 }
    private var slots: [Key: Int] = [:]
    private var nodes: [Node] = []
    private var links: [Link] = []
    private var headSlot = LRUList.none
    private var tailSlot = LRUList.none

    var count: Int { nodes.count }
    var isEmpty: Bool { nodes.isEmpty }
    var head: Key? { headSlot == Self.none ? nil : nodes[headSlot].key }
    var tail: Key? { tailSlot == Self.none ? nil : nodes[tailSlot].key }

    /// The value for `key` without changing its position.
    func peek(_ key: Key) -> Value? { slots[key].map { nodes[$0].value } }

    /// The value for `key`, moved to the head when `touch` is true.
    mutating func value(for key: Key, touch: Bool) -> Value? {
        guard let slot = slots[key] else { return nil }
        if touch { moveSlotToHead(slot) }
        return nodes[slot].value
    }

    /// Runs `body` on the value for `key` in place and, when it returns a result, moves the entry to the head.
    mutating func access<R>(_ key: Key, _ body: (inout Value) -> R?) -> R? {
        guard let slot = slots[key] else { return nil }
        guard let result = body(&nodes[slot].value) else { return nil }
        moveSlotToHead(slot)
        return result
    }

    /// Changes the value of an existing entry in place (position unchanged). Returns false when absent.
    @discardableResult
    mutating func update(_ key: Key, _ body: (inout Value) -> Void) -> Bool {
        guard let slot = slots[key] else { return false }
        body(&nodes[slot].value)
        return true
    }

    /// Inserts or replaces `value` for `key` at the head; returns the replaced value.
    @discardableResult
    mutating func insertAtHead(_ key: Key, _ value: Value) -> Value? {
        if let slot = slots[key] {
            let old = nodes[slot].value
            nodes[slot].value = value
            moveSlotToHead(slot)
            return old
        }
        let slot = nodes.count
        nodes.append(Node(key: key, value: value))
        links.append(Link(newer: Self.noLink, older: Self.noLink))
        slots[key] = slot
        linkAtHead(slot)
        return nil
    }

    /// Removes and returns the value for `key`.
    @discardableResult
    mutating func remove(_ key: Key) -> Value? {
        guard let slot = slots.removeValue(forKey: key) else { return nil }
        unlink(slot)
        let value = nodes[slot].value
        let last = nodes.count - 1
        if slot != last {
            // Fill the hole with the last node and point its neighbours and its key at the new slot.
            nodes.swapAt(slot, last)
            links.swapAt(slot, last)
            let moved = links[slot]
            if moved.newer != Self.noLink { links[Int(moved.newer)].older = Int32(slot) } else { headSlot = slot }
            if moved.older != Self.noLink { links[Int(moved.older)].newer = Int32(slot) } else { tailSlot = slot }
            slots[nodes[slot].key] = slot
        }
        nodes.removeLast()
        links.removeLast()
        return value
    }

    /// Removes and returns the least recently used entry.
    mutating func removeTail() -> (key: Key, value: Value)? {
        guard let tail, let value = remove(tail) else { return nil }
        return (tail, value)
    }

    mutating func moveToHead(_ key: Key) {
        guard let slot = slots[key] else { return }
        moveSlotToHead(slot)
    }

    mutating func removeAll() {
        slots.removeAll()
        nodes.removeAll()
        links.removeAll()
        headSlot = Self.none
        tailSlot = Self.none
    }

    /// Keys from most to least recently used.
    var keysFromHead: [Key] {
        var keys: [Key] = []
        keys.reserveCapacity(nodes.count)
        var cursor = headSlot
        while cursor != Self.none {
            keys.append(nodes[cursor].key)
            cursor = Int(links[cursor].older)
        }
        return keys
    }

    /// Values in no particular order.
    var values: some Collection<Value> { nodes.lazy.map(\.value) }

    // MARK: - Links

    private mutating func moveSlotToHead(_ slot: Int) {
        guard slot != headSlot else { return }
        unlink(slot)
        linkAtHead(slot)
    }

    private mutating func unlink(_ slot: Int) {
        let link = links[slot]
        if link.newer != Self.noLink { links[Int(link.newer)].older = link.older } else { headSlot = Int(link.older) }
        if link.older != Self.noLink { links[Int(link.older)].newer = link.newer } else { tailSlot = Int(link.newer) }
        links[slot] = Link(newer: Self.noLink, older: Self.noLink)
    }

    private mutating func linkAtHead(_ slot: Int) {
        links[slot] = Link(newer: Self.noLink, older: Int32(headSlot))
        if headSlot != Self.none { links[headSlot].newer = Int32(slot) }
        headSlot = slot
        if tailSlot == Self.none { tailSlot = slot }
    }
}
