import Dispatch
import Foundation
import Synchronization

/// Standard error for the log, written in batches.
///
/// The service logs a line per request. Written one `write(2)` each, as a plain stream does, those lines cost
/// the service about a third of its rate on answers from the result cache; gathered and written together they
/// cost a small part of that. A line waits at most `delay` before a background queue writes it, with whatever
/// else came meanwhile.
///
/// Bounded: while more than `limit` bytes wait (nothing reads standard error), new lines are dropped, and the
/// next write says how many. ``flush()`` writes everything at once; the service calls it before it exits.
final class BufferedStandardError: Sendable {
    private struct State {
        var pending: [UInt8] = []
        var isScheduled = false
        var dropped = 0
    }

    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "image-service.log")
    private let delay: DispatchTimeInterval
    private let limit: Int

    init(delay: DispatchTimeInterval = .milliseconds(10), limit: Int = 4 << 20) {
        self.delay = delay
        self.limit = limit
    }

    func write(_ string: String) {
        let schedulesWrite = state.withLock { state -> Bool in
            guard state.pending.count + string.utf8.count <= limit else {
                state.dropped += 1
                return false
            }
            state.pending.append(contentsOf: string.utf8)
            guard !state.isScheduled else { return false }
            state.isScheduled = true
            return true
        }
        if schedulesWrite { queue.asyncAfter(deadline: .now() + delay) { self.writePending() } }
    }

    /// Writes every line given so far, before returning.
    func flush() {
        queue.sync { writePending() }
    }

    /// On `queue`.
    private func writePending() {
        var (bytes, dropped) = state.withLock { state -> ([UInt8], Int) in
            defer {
                state.pending = []
                state.isScheduled = false
                state.dropped = 0
            }
            return (state.pending, state.dropped)
        }
        if dropped > 0 {
            bytes += Array("\(dropped) log lines dropped: standard error was not read fast enough\n".utf8)
        }
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return   // standard error is closed or broken: the lines have nowhere to go
                }
            }
        }
    }
}
