import ImageOriginServer

extension ImageOriginServer {
    /// Serves `route` at `bytesPerSecond`, and its next response stops after `afterBytes` body bytes until the
    /// client leaves; later responses are whole (still shaped). Replaces the faults set for `route` before.
    ///
    /// For tests that act on a transfer mid-body (cancel or suspend it, release its delegate, let its view go):
    /// a slow transfer alone can end before a busy machine lets the action land, and the origin then records a
    /// finished response instead of a client that went away. Stalled, the transfer is mid-body whenever the
    /// action comes, and a client that never acts fails on its idle timeout instead of passing.
    func stallNextResponse(to route: String, afterBytes: Int = 24_000, bytesPerSecond: Int = 40_000) {
        setShaping(OriginShaping(bytesPerSecond: bytesPerSecond), for: route)
        setFaults([.stallAfterBytes(afterBytes)], for: route, count: 1)
    }
}
