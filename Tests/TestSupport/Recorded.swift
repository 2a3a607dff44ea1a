import Synchronization
import PipelineLocking

/// A value that callbacks on any thread append to and tests read: a `Locked` value in a class, so escaping
/// closures can capture it.
public final class Recorded<Element: Sendable>: Sendable {
    private let storage = Locked<[Element]>([])

    public init() {}
    public func append(_ element: Element) { storage.withLock { $0.append(element) } }
    public var all: [Element] { storage.withLock { $0 } }
    public var count: Int { storage.withLock { $0.count } }
}
