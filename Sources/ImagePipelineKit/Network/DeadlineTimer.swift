import Dispatch
import PipelineLocking

/// One timer for the deadlines of every download in the process: connect, idle and total timeouts, transfer-rate
/// windows, and how long a download's result is kept for a fetch that has not stored it yet.
///
/// A timer per download (`asyncAfter`) would cost a timer source and a wake-up of libdispatch's timer thread at
/// every download's start, and another when it fires, usually long after the download ended. Here a deadline
/// is a row in a table. The one timer is set again only when a deadline comes before the one it is
/// set for, which a download's does not when every download has the same timeouts; a deadline whose download
/// ended is taken out (``cancel(_:)``) and never fires.
///
/// `fire` runs on the timer's own queue: it must be short, and hop to the queue its work belongs on.
final class DeadlineTimer: @unchecked Sendable {
    // @unchecked: the table is behind its lock, and a dispatch source may be scheduled from any thread.
    /// Names a scheduled deadline, for ``cancel(_:)``.
    struct Token: Hashable, Sendable {
        fileprivate let id: UInt64
    }

    static let shared = DeadlineTimer()

    private let source: any DispatchSourceTimer
    private let table = Locked(Table())

    private struct Table {
        var deadlines: [Token: (deadline: DispatchTime, fire: @Sendable () -> Void)] = [:]
        var nextID: UInt64 = 0
        /// When the timer is set to fire; `nil` while no deadline is scheduled.
        var setFor: DispatchTime?
    }

    init() {
        source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "ImagePipelineKit.DeadlineTimer"))
        source.setEventHandler { [weak self] in self?.fireDueDeadlines() }
        source.activate()
    }

    deinit {
        source.cancel()
    }

    /// Calls `fire` once `delay` has passed, unless the returned token is cancelled before.
    @discardableResult
    func schedule(after delay: DispatchTimeInterval, _ fire: @escaping @Sendable () -> Void) -> Token {
        let deadline = DispatchTime.now() + delay
        return table.withLock { table in
            table.nextID += 1
            let token = Token(id: table.nextID)
            table.deadlines[token] = (deadline, fire)
            if table.setFor.map({ deadline < $0 }) ?? true { setTimer(for: deadline, in: &table) }
            return token
        }
    }

    /// Takes a deadline out of the table: it will not fire (unless it is firing already).
    func cancel(_ token: Token) {
        table.withLock { _ = $0.deadlines.removeValue(forKey: token) }
    }

    /// How many deadlines are scheduled (for tests).
    var scheduledCount: Int {
        table.withLock { $0.deadlines.count }
    }

    /// On the timer's queue: fires every deadline that has passed, then sets the timer for the next one. The
    /// table holds the deadlines of the downloads running now, so looking through it is cheap.
    private func fireDueDeadlines() {
        let now = DispatchTime.now()
        let due = table.withLock { table -> [@Sendable () -> Void] in
            let passed = table.deadlines.filter { $0.value.deadline <= now }
            for token in passed.keys { table.deadlines[token] = nil }
            table.setFor = nil
            if let next = table.deadlines.values.map(\.deadline).min() { setTimer(for: next, in: &table) }
            return passed.values.sorted { $0.deadline < $1.deadline }.map(\.fire)
        }
        for fire in due { fire() }
    }

    private func setTimer(for deadline: DispatchTime, in table: inout Table) {
        table.setFor = deadline
        // A millisecond of leeway: deadlines that close together fire in one wake-up.
        source.schedule(deadline: deadline, leeway: .milliseconds(1))
    }
}
