import Dispatch

/// Runs blocking work (sockets, child processes, synchronous waits) on a thread of its own and awaits it.
///
/// Swift Testing runs tests on Swift concurrency's cooperative pool, which has one thread per core: on a
/// 2-core CI machine, two tests blocking there stall every other test in the process, and timeouts then fire
/// in tests that did nothing wrong. `DispatchQueue.global()` is no way out on Linux: its default pool is the
/// one Swift concurrency runs on, also sized to the cores. A queue of our own targets the overcommitting
/// pool, which starts a thread for it whatever the others are doing.
public func offloaded<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue(label: "TestSupport.offloaded").async {
            continuation.resume(with: Result { try work() })
        }
    }
}
