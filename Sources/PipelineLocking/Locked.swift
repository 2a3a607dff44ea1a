// The lock every module of the package uses for state shared between threads.
//
// Normally it is the standard library's `Synchronization.Mutex`. On Linux that Mutex waits with raw futex
// system calls, which ThreadSanitizer cannot see: under `--sanitize=thread` every access it protects is reported
// as a race (even a minimal program that shares one Mutex between two threads). `make stress-tsan` therefore builds with `TSAN_VISIBLE_LOCKS`, which
// swaps in a pthread mutex that ThreadSanitizer understands, so that what it reports is real.

#if TSAN_VISIBLE_LOCKS
#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex (the ThreadSanitizer build's stand-in for `Synchronization.Mutex`).
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
    // @unchecked: `value` is only touched between `pthread_mutex_lock` and `pthread_mutex_unlock`.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: consuming Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    public func withLock<Result: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
#else
import Synchronization

/// A value behind a lock: `Synchronization.Mutex` (see this file's header for the ThreadSanitizer build).
public typealias Locked<Value: ~Copyable> = Synchronization.Mutex<Value>
#endif
