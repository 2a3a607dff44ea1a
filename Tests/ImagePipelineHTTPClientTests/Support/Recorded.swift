import Synchronization

/// A value that callbacks on any thread append to and tests read: a `Mutex` in a class, so escaping
/// closures can capture it.
final class Recorded<Element: Sendable>: Sendable {
    private let storage = Mutex<[Element]>([])

    func append(_ element: Element) { storage.withLock { $0.append(element) } }
    var all: [Element] { storage.withLock { $0 } }
    var count: Int { storage.withLock { $0.count } }
}
