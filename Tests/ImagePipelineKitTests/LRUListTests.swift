import Testing
@testable import ImagePipelineKit

@Suite("LRU list")
struct LRUListTests {
    /// The obvious model: an array of (key, value), most recent first.
    struct Model {
        var items: [(key: Int, value: Int)] = []
        mutating func touch(_ key: Int) -> Int? {
            guard let index = items.firstIndex(where: { $0.key == key }) else { return nil }
            let item = items.remove(at: index)
            items.insert(item, at: 0)
            return item.value
        }
        mutating func insert(_ key: Int, _ value: Int) {
            items.removeAll { $0.key == key }
            items.insert((key, value), at: 0)
        }
        mutating func remove(_ key: Int) -> Int? {
            guard let index = items.firstIndex(where: { $0.key == key }) else { return nil }
            return items.remove(at: index).value
        }
    }

    @Test("Random inserts, hits, in-place updates, removals and evictions keep the exact LRU order of a simple model", arguments: [1, 2, 3])
    func matchesModel(seed: UInt64) {
        var generator = SplitMix(seed: seed)
        var list = LRUList<Int, Int>()
        var model = Model()
        for step in 0..<5_000 {
            let key = Int(generator.next() % 40)
            switch generator.next() % 6 {
            case 0, 1:
                list.insertAtHead(key, step)
                model.insert(key, step)
            case 2:
                #expect(list.value(for: key, touch: true) == model.touch(key))
            case 3:
                let hit = list.access(key) { (value: inout Int) -> Int? in value += 1; return value }
                if let index = model.items.firstIndex(where: { $0.key == key }) {
                    model.items[index].value += 1
                    _ = model.touch(key)
                }
                #expect(hit == model.items.first(where: { $0.key == key }).map(\.value))
            case 4:
                #expect(list.remove(key) == model.remove(key))
            default:
                let tail = list.removeTail()
                let expected = model.items.popLast()
                #expect(tail?.key == expected?.key && tail?.value == expected?.value)
            }
            #expect(list.keysFromHead == model.items.map(\.key))
            #expect(list.head == model.items.first?.key && list.tail == model.items.last?.key)
            #expect(list.count == model.items.count)
        }
    }

    /// A tiny deterministic generator, so a failure replays.
    struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
