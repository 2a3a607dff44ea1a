import Foundation
import PipelineLocking

/// A fixed number of slots for work that keeps a core busy (decodes, pixel edits, encodes): whoever holds one
/// runs, the others wait for it in the order they came.
///
/// Decodes start when their bytes are in, so on a fast link a pipeline decodes as many images at once as its
/// operation queue lets fetches run (``GlobalConfiguration/operationQueue``), more than there are cores. That
/// costs no throughput, but the decodes then share the cores in turns of a scheduler tick, and a thread that
/// wakes for short work (an event loop with a request to answer, a callback) waits behind several of them. Give
/// a configuration one slot per core (``GlobalConfiguration/processingSlots``) and take a slot around your own
/// CPU-heavy work too, and no more of that work is runnable than there are cores: the short work finds a core
/// within a turn.
///
/// A thread waits for its slot blocked, a task suspended (the `async` variant of `withSlot(_:)`); a slot freed
/// goes to the first in line of either kind.
public final class ProcessingSlots: Sendable {
    private enum Waiter {
        case thread(DispatchSemaphore)
        case task(CheckedContinuation<Void, Never>)
    }

    private struct State {
        var free: Int
        /// Never longer than the threads and tasks that want a slot at once, so taking its first is cheap.
        var line: [Waiter] = []

        /// Takes a free slot, if there is one.
        mutating func takeFreeSlot() -> Bool {
            guard free > 0 else { return false }
            free -= 1
            return true
        }
    }

    /// How many may run at once.
    public let count: Int
    private let state: Locked<State>

    /// `count` slots (at least one); the default is one per active core.
    public init(count: Int = ProcessInfo.processInfo.activeProcessorCount) {
        self.count = max(1, count)
        state = Locked(State(free: max(1, count)))
    }

    /// The threads and tasks waiting for a slot now.
    public var waitingCount: Int { state.withLock { $0.line.count } }

    /// Runs `body` once a slot is free, blocking the calling thread until then. For work on dispatch queues and
    /// threads of your own; a task should use the `async` variant, which does not hold a thread of Swift's
    /// concurrency pool while it waits.
    public func withSlot<T>(_ body: () throws -> T) rethrows -> T {
        let semaphore: DispatchSemaphore? = state.withLock { state in
            if state.takeFreeSlot() { return nil }
            let semaphore = DispatchSemaphore(value: 0)
            state.line.append(.thread(semaphore))
            return semaphore
        }
        semaphore?.wait()   // woken by `release`, which handed this thread the slot
        defer { release() }
        return try body()
    }

    /// Runs `body` once a slot is free, suspending the calling task until then. A cancelled task still waits
    /// for its turn: the line is never longer than the work ahead of it.
    public func withSlot<T>(_ body: () throws -> T) async rethrows -> T {
        if !state.withLock({ $0.takeFreeSlot() }) {
            await withCheckedContinuation { continuation in
                let isAdmittedMeanwhile = state.withLock { state in
                    if state.takeFreeSlot() { return true }
                    state.line.append(.task(continuation))
                    return false
                }
                if isAdmittedMeanwhile { continuation.resume() }
            }
        }
        defer { release() }
        return try body()
    }

    /// Hands the slot to the first in line, or frees it.
    private func release() {
        let next: Waiter? = state.withLock { state in
            guard !state.line.isEmpty else {
                state.free += 1
                return nil
            }
            return state.line.removeFirst()
        }
        switch next {
        case .thread(let semaphore): semaphore.signal()
        case .task(let continuation): continuation.resume()
        case nil: break
        }
    }
}
