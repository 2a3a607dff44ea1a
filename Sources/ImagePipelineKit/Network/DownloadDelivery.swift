import Dispatch
import Foundation
import Synchronization
import PipelineLocking

/// The half of a download that both downloaders share: it owns the delegate, delivers events to it one at a
/// time and in order, guarantees exactly one completion, and enforces the limits that do not depend on the
/// transport (response size, connect and idle timeouts, the total deadline, the minimum transfer rate).
///
/// Events wait in a backlog that one thread at a time drains. With `deliversOnTransportThread`, the transport's
/// own thread drains it when nobody else is (an event-loop thread: no hop at all); otherwise, and always for
/// cancels, limits and timers, a block on the download's serial queue does. Events that arrive while a drain
/// runs join its backlog, so a burst of reads costs one wake-up, not one each: on loopback, those wake-ups
/// (context switches) were most of a 200 KiB download's cost.
///
/// A transport feeds it in order: ``didConnect()``, `receive(_ response:then:)` once,
/// `receive(_ chunk:then:)` per chunk, then ``finish(_:)``. When the delivery itself ends the download
/// (cancel, a limit, a timeout) it calls the stop closure given to ``attachTransport(stop:)``; the transport
/// may keep reporting after that, and whatever it reports is dropped.
///
/// Completion rules: the transport's completion is delivered after every event it reported before it. A
/// ``cancel()`` that comes before the completion was handed to the delegate wins: events not yet delivered
/// are dropped and the completion becomes ``DownloadError/cancelled``. Limits and timeouts never replace a
/// completion the transport already reported.
package final class DownloadDelivery: Sendable {
    /// The download's serial queue: the timeouts are checked here (when ``DeadlineTimer`` says one may have
    /// passed), and the backlog drains here unless the transport's thread drains it (see
    /// `deliversOnTransportThread`).
    package let queue: DispatchQueue
    private let limits: DownloadLimits
    private let deliversOnTransportThread: Bool
    private let clock = ContinuousClock()
    private let state: Locked<State>

    private struct State {
        var delegate: (any ImageDownloadDelegate)?
        var task: (any ImageDownloadTask)?
        var stopTransport: (@Sendable () -> Void)?
        var connected = false
        var receivedBytes = 0
        var started: ContinuousClock.Instant
        var lastActivity: ContinuousClock.Instant
        /// Where the current window of the minimum transfer rate began (from the response head on), and the
        /// body bytes that arrived in it.
        var rateWindowStart: ContinuousClock.Instant?
        var rateWindowBytes = 0
        var completion = Completion.none
        /// Set when events not yet delivered must be dropped (cancel, a limit, a timeout, or completion delivered).
        var dropsEvents = false
        /// Delegate calls waiting for the drain, oldest first.
        var backlog: [@Sendable () -> Void] = []
        /// Whether a thread is draining the backlog, or a drain is queued: then new events only join the backlog.
        var draining = false
        /// The next check of the timeouts, in the process's one ``DeadlineTimer``; taken out once the
        /// completion is delivered.
        var timer: DeadlineTimer.Token?
    }

    private enum Completion {
        case none
        case pending(DownloadError?)
        case delivered
    }

    /// A delivery to `delegate`; events start flowing once ``begin(task:)`` binds the task they are about.
    /// With `deliversOnTransportThread`, the transport's events (head, chunks, completion) are handed to the
    /// delegate on the thread that reports them whenever no other delivery is running; give it only to a
    /// transport whose threads may run the delegate (an event loop that is never the `startDownload` caller's).
    package init(delegate: any ImageDownloadDelegate, limits: DownloadLimits, label: String,
                 deliversOnTransportThread: Bool = false) {
        queue = DispatchQueue(label: label)
        self.limits = limits
        self.deliversOnTransportThread = deliversOnTransportThread
        let now = ContinuousClock().now
        state = Locked(State(delegate: delegate, started: now, lastActivity: now))
    }

    /// Binds the public task passed to the delegate (kept until the completion is delivered) and starts the
    /// connect and idle timers.
    package func begin(task: any ImageDownloadTask) {
        state.withLock { state in
            state.task = task
            let now = clock.now
            state.started = now
            state.lastActivity = now
        }
        scheduleTimer(after: min(limits.connectTimeout, limits.idleTimeout, limits.totalTimeout ?? limits.idleTimeout,
                                 limits.minimumTransferRate?.window ?? limits.idleTimeout))
    }

    /// Gives the delivery a way to stop the transport. Called at once when the download is already over.
    package func attachTransport(stop: @escaping @Sendable () -> Void) {
        let stopNow = state.withLock { state -> Bool in
            if state.dropsEvents { return true }
            state.stopTransport = stop
            return false
        }
        if stopNow { stop() }
    }

    /// Whether the download is over for the transport's purposes (nothing more will be delivered).
    package var isStopped: Bool {
        state.withLock { $0.dropsEvents }
    }

    // MARK: - Transport events

    /// The connection is established: the connect timeout no longer applies.
    package func didConnect() {
        state.withLock { state in
            state.connected = true
            state.lastActivity = clock.now
        }
    }

    /// Something arrived that is not delivered (a redirect's head): resets the idle timer.
    package func noteActivity() {
        state.withLock { state in
            state.connected = true
            state.lastActivity = clock.now
        }
    }

    /// Delivers the final response head. `then` runs once the delegate has returned (on the thread that
    /// delivered it), with `false` when the download is over and the transport should stop reading; it always
    /// runs exactly once.
    package func receive(_ response: DownloadResponse, then resume: @escaping @Sendable (Bool) -> Void) {
        let tooLarge = state.withLock { state -> Bool in
            state.connected = true
            state.lastActivity = clock.now
            state.rateWindowStart = state.lastActivity
            // A 304 or 204 has no body, whatever length it declares (a 304 may repeat the image's).
            if let limit = limits.maxResponseBytes, let length = response.expectedContentLength, length > limit,
               response.statusCode != 304, response.statusCode != 204 {
                return true
            }
            return false
        }
        if tooLarge, let limit = limits.maxResponseBytes {
            fail(.responseTooLarge(limit: limit))
        }
        deliver(then: resume) { delegate, task in delegate.download(task, didReceive: response) }
    }

    /// Delivers the next body chunk (empty chunks are skipped). `then` as for the response head: the
    /// transport's signal to read on.
    package func receive(_ chunk: Data, then resume: @escaping @Sendable (Bool) -> Void) {
        let tooLarge = state.withLock { state -> Bool in
            state.lastActivity = clock.now
            state.receivedBytes += chunk.count
            state.rateWindowBytes += chunk.count
            if let limit = limits.maxResponseBytes, state.receivedBytes > limit { return true }
            return false
        }
        if tooLarge, let limit = limits.maxResponseBytes {
            fail(.responseTooLarge(limit: limit))
        }
        if chunk.isEmpty {
            submit(fromTransport: true) { resume(!self.isStopped) }
            return
        }
        deliver(then: resume) { delegate, task in delegate.download(task, didReceive: chunk) }
    }

    /// The transport's end: `nil` when the body ended as framed. Delivered after everything the transport
    /// reported before; ignored when the download already ended.
    package func finish(_ error: DownloadError?) {
        let enqueue = state.withLock { state -> Bool in
            guard case .none = state.completion else { return false }
            state.completion = .pending(error)
            state.stopTransport = nil
            return true
        }
        if enqueue { submit(fromTransport: true) { self._drain_deliverCompletion() } }
    }

    // MARK: - Ending from this side

    /// Cancels: unless the completion was already handed to the delegate, the delegate gets
    /// ``DownloadError/cancelled`` next and nothing else.
    package func cancel() {
        end(with: .cancelled, overridesPendingCompletion: true)
    }

    /// Ends the download with `error` (a limit or a timeout) unless it already ended.
    package func fail(_ error: DownloadError) {
        end(with: error, overridesPendingCompletion: false)
    }

    private func end(with error: DownloadError, overridesPendingCompletion: Bool) {
        let (enqueue, stop) = state.withLock { state -> (Bool, (@Sendable () -> Void)?) in
            switch state.completion {
            case .delivered:
                return (false, nil)
            case .pending:
                guard overridesPendingCompletion else { return (false, nil) }
                state.completion = .pending(error)
                state.dropsEvents = true
                return (false, nil)
            case .none:
                state.completion = .pending(error)
                state.dropsEvents = true
                let stop = state.stopTransport
                state.stopTransport = nil
                return (true, stop)
            }
        }
        stop?()
        // Never on the caller's thread: whoever cancels may hold locks the delegate's completion needs.
        if enqueue { submit(fromTransport: false) { self._drain_deliverCompletion() } }
    }

    // MARK: - The serial drain

    /// Adds `event` to the backlog and makes sure somebody drains it: this thread, when the transport reports
    /// the event and may deliver it; otherwise a block on the download's queue.
    private func submit(fromTransport: Bool, _ event: @escaping @Sendable () -> Void) {
        let startDrain = state.withLock { state -> Bool in
            state.backlog.append(event)
            if state.draining { return false }
            state.draining = true
            return true
        }
        guard startDrain else { return }
        if fromTransport && deliversOnTransportThread {
            _drain_run()
        } else {
            queue.async { self._drain_run() }
        }
    }

    // Runs on the one thread that drains now: until the backlog is empty, including events added meanwhile.
    private func _drain_run() {
        while true {
            let batch = state.withLock { state -> [@Sendable () -> Void] in
                if state.backlog.isEmpty {
                    state.draining = false
                    return []
                }
                let batch = state.backlog
                state.backlog.removeAll(keepingCapacity: true)
                return batch
            }
            if batch.isEmpty { return }
            for event in batch { event() }
        }
    }

    private func deliver(then resume: @escaping @Sendable (Bool) -> Void,
                         _ event: @escaping @Sendable (any ImageDownloadDelegate, any ImageDownloadTask) -> Void) {
        submit(fromTransport: true) {
            let target = self.state.withLock { state -> (any ImageDownloadDelegate, any ImageDownloadTask)? in
                guard !state.dropsEvents, let delegate = state.delegate, let task = state.task else { return nil }
                return (delegate, task)
            }
            guard let (delegate, task) = target else {
                resume(false)
                return
            }
            let began = self.clock.now
            event(delegate, task)
            // Time the delegate spent is neither the server's idleness nor its slowness.
            let running = self.state.withLock { state -> Bool in
                state.lastActivity = self.clock.now
                if let windowStart = state.rateWindowStart { state.rateWindowStart = windowStart + (state.lastActivity - began) }
                return !state.dropsEvents
            }
            resume(running)
        }
    }

    // Runs in the drain.
    private func _drain_deliverCompletion() {
        let target = state.withLock { state -> (any ImageDownloadDelegate, any ImageDownloadTask, DownloadError?)? in
            guard case .pending(let error) = state.completion, let delegate = state.delegate, let task = state.task else {
                return nil
            }
            state.completion = .delivered
            state.dropsEvents = true
            state.delegate = nil
            state.task = nil
            state.stopTransport = nil
            if let timer = state.timer { DeadlineTimer.shared.cancel(timer) }
            state.timer = nil
            return (delegate, task, error)
        }
        guard let (delegate, task, error) = target else { return }
        delegate.download(task, didCompleteWith: error)
    }

    // MARK: - Timers

    private func scheduleTimer(after delay: Duration) {
        // Clamped to an hour (the check reschedules itself), so a huge timeout cannot overflow the conversion.
        let delay = min(max(delay, .milliseconds(1)), .seconds(3600))
        let timer = DeadlineTimer.shared.schedule(after: .nanoseconds(Int(delay.nanoseconds))) { [weak self] in
            guard let self else { return }
            queue.async { self._queue_checkTimers() }
        }
        // A check that decided to wait just as the completion was delivered comes too late to be kept: the
        // timer's table holds the deadlines of running downloads only.
        let ended = state.withLock { state -> Bool in
            if case .delivered = state.completion { return true }
            state.timer = timer
            return false
        }
        if ended { DeadlineTimer.shared.cancel(timer) }
    }

    // Runs on the download's queue. Reschedules itself for the nearest deadline until the download ends.
    private func _queue_checkTimers() {
        enum Verdict { case ended, expired(DownloadError), wait(Duration) }
        let verdict = state.withLock { state -> Verdict in
            guard case .none = state.completion else { return .ended }
            let now = clock.now
            var next = now + limits.idleTimeout
            if let total = limits.totalTimeout {
                let deadline = state.started + total
                if now >= deadline { return .expired(.deadlineExceeded) }
                next = min(next, deadline)
            }
            // Events being handed to the delegate (or about to be): time the delegate spends is not the
            // server's idleness, and the drain stamps the activity when it is done. Look again within a rate
            // window, not an idle timeout: a check that lands on a delivery must not put off the rate's.
            if state.draining { return .wait(min(next, now + (limits.minimumTransferRate?.window ?? limits.idleTimeout)) - now) }
            next = min(next, state.lastActivity + limits.idleTimeout)
            if !state.connected {
                let connectDeadline = state.started + limits.connectTimeout
                if now >= connectDeadline { return .expired(.connectTimedOut) }
                next = min(next, connectDeadline)
            }
            if now >= state.lastActivity + limits.idleTimeout { return .expired(.idleTimedOut) }
            if let rate = limits.minimumTransferRate {
                if let windowStart = state.rateWindowStart, now >= windowStart + rate.window {
                    if state.rateWindowBytes < rate.bytesPerWindow { return .expired(.transferTooSlow) }
                    state.rateWindowStart = now
                    state.rateWindowBytes = 0
                }
                // Before the head there is no window yet: look again within one, so a window is judged at most
                // one window late.
                next = min(next, (state.rateWindowStart ?? now) + rate.window)
            }
            return .wait(next - now)
        }
        switch verdict {
        case .ended: break
        case .expired(let error): fail(error)
        case .wait(let delay): scheduleTimer(after: delay)
        }
    }
}
