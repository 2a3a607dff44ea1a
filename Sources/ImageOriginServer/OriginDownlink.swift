import NIOCore
import Synchronization
import PipelineLocking

/// The server's one simulated downlink (``OriginLink``): holds the link set with
/// ``ImageOriginServer/setLink(_:)`` and divides its bandwidth fairly among the responses sending a body.
///
/// Each response sending a body ``join()``s, asks ``take(_:upTo:atLeast:)`` for bytes before each write and
/// ``leave(_:)``s when its body has gone out. Bandwidth is handed out lazily: every call first shares the bytes
/// the link has earned since the last call among the flows joined in that interval, equally, but no flow past
/// its credit cap; what a capped flow cannot hold goes to the others (water-filling, so the split is max-min
/// fair), and what nobody can hold is lost, as an idle link's capacity is. A flow held back by its own
/// ``OriginShaping`` cap or by a client that is not reading thus leaves its share to the rest.
///
/// Thread-safe: one lock around the flows' credits, taken for a few microseconds by the event loops of every
/// connection; nothing here waits. A flow whose credit is short is told 0 and retries on its next tick.
final class OriginDownlink: Sendable {
    /// One response's place on the link.
    struct Flow: Hashable, Sendable {
        fileprivate let id: Int
    }

    private struct State {
        var link: OriginLink?
        /// Bytes each joined flow may send now.
        var credits: [Int: Double] = [:]
        var nextID = 0
        /// When the link's earnings were last shared out.
        var refilledAt = NIODeadline.now()
    }

    /// Grants are never smaller than this many bytes (or the rest of a body, or 100 ms of the whole link on a
    /// very slow one), however many flows share the link: fifteen responses on a 1 MB/s link would otherwise
    /// write 675-byte chunks a hundred times a second each, and a client pays a callback for every chunk.
    static let minimumGrant = 4 * 1024

    private let state = Locked(State())

    /// The link set now; `nil` for none.
    var link: OriginLink? { state.withLock { $0.link } }

    /// Replaces the link. A new bandwidth applies at once to bodies in flight; latencies apply to responses
    /// planned from now on.
    func setLink(_ link: OriginLink?) {
        state.withLock { state in
            Self.refill(&state, now: .now())
            state.link = link
        }
    }

    /// Adds a response that is about to send body bytes.
    func join() -> Flow {
        state.withLock { state in
            Self.refill(&state, now: .now())
            let id = state.nextID
            state.nextID += 1
            state.credits[id] = 0
            return Flow(id: id)
        }
    }

    /// Removes a response whose body has ended, stalls or was abandoned; its unused credit is dropped.
    /// Leaving twice does nothing.
    func leave(_ flow: Flow) {
        state.withLock { state in
            Self.refill(&state, now: .now())
            state.credits[flow.id] = nil
        }
    }

    /// How many bytes `flow` may write now: at most `limit`, and 0 (wait for the next tick) unless at least
    /// `need` bytes, or the link's smallest grant if that is less, are available. Without a link or a
    /// bandwidth limit, `limit`.
    func take(_ flow: Flow, upTo limit: Int, atLeast need: Int) -> Int {
        state.withLock { state in
            let now = NIODeadline.now()
            Self.refill(&state, now: now)
            guard let rate = state.link?.downlinkBytesPerSecond, rate > 0 else { return limit }
            guard let credit = state.credits[flow.id] else { return 0 }  // left already: nothing more to send
            let threshold = Self.threshold(rate: rate, flows: state.credits.count)
            let granted = min(limit, Int(credit))
            guard granted > 0, granted >= min(need, threshold) else { return 0 }
            state.credits[flow.id] = credit - Double(granted)
            return granted
        }
    }

    /// Shares what the link earned since the last share-out among the flows joined now.
    private static func refill(_ state: inout State, now: NIODeadline) {
        let elapsed = Double((now - state.refilledAt).nanoseconds) / 1e9
        state.refilledAt = now
        guard elapsed > 0, let rate = state.link?.downlinkBytesPerSecond, rate > 0, !state.credits.isEmpty else {
            return
        }
        let cap = creditCap(rate: rate, flows: state.credits.count)
        // Water-filling: visit the flows from the least room to the most; each takes an equal part of what is
        // left, or only its room, and what it leaves is shared by the flows after it.
        var amount = Double(rate) * elapsed
        var remaining = state.credits.count
        for (id, credit) in state.credits.sorted(by: { $0.value > $1.value }) {
            let given = min(max(cap - credit, 0), amount / Double(remaining))
            state.credits[id] = credit + given
            amount -= given
            remaining -= 1
        }
    }

    /// The fewest bytes a flow is granted at once, out of `flows` sharing `rate`: a tick of its share, but not
    /// less than ``minimumGrant`` (nor more than 100 ms of the whole link).
    static func threshold(rate: Int, flows: Int) -> Int {
        let share = rate / max(flows, 1)
        return max(OriginHTTPHandler.bytesPerTick(share), min(minimumGrant, max(rate / 10, 1)))
    }

    /// The most credit a flow holds: 100 ms of its share, and at least twice its threshold, so that a flow
    /// waiting for its next tick still earns while it waits.
    static func creditCap(rate: Int, flows: Int) -> Double {
        let share = rate / max(flows, 1)
        return Double(max(share / 10, 2 * threshold(rate: rate, flows: flows)))
    }
}
