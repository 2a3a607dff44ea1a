import Dispatch
import PipelineLocking

/// Hands events from any thread to a serial queue, in order, with one block per burst: events that arrive
/// while a drain is queued join it. A download's chunks come in bursts (a transport reads whatever the socket
/// holds), and a block per chunk would cost the queue a wake-up, often a context switch, for each.
final class QueueBacklog<Event: Sendable>: Sendable {
    private let queue: DispatchQueue
    private let events = Locked<[Event]>([])
    private let drain: @Sendable ([Event]) -> Void

    /// `drain` runs on `queue` with the events added since the last drain, oldest first.
    init(queue: DispatchQueue, drain: @escaping @Sendable ([Event]) -> Void) {
        self.queue = queue
        self.drain = drain
    }

    /// Adds `event`; the drain it starts, if any, is a block of the queue, or goes with the shares of
    /// `fanOut` (a download's burst, handed out to the fetches that share it together).
    func add(_ event: Event, fanOut: DownloadFanOut? = nil) {
        let startsDrain = events.withLock { events -> Bool in
            events.append(event)
            return events.count == 1
        }
        guard startsDrain else { return }
        let drainNow: @Sendable () -> Void = { [self] in
            drain(events.withLock { events in
                defer { events = [] }
                return events
            })
        }
        if let fanOut { fanOut.add(drainNow, on: queue) } else { queue.async(execute: drainNow) }
    }
}
