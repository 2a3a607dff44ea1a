import NIOCore
import Synchronization
import PipelineLocking

/// The server's open client connections, so ``ImageOriginServer/shutdown()`` can close stalled and
/// kept-alive ones, and so each connection gets a number for the request log.
///
/// Thread-safe: one lock around the table. Channels are added by the accept path and removed by their own
/// close future, both on event-loop threads.
final class OriginConnections: Sendable {
    private struct State {
        var channels: [Int: any Channel] = [:]
        var nextID = 1
        var isShuttingDown = false
    }

    private let state = Locked(State())

    /// Whether ``closeAll()`` has begun: a connection closed from now on was closed by the server.
    var isShuttingDown: Bool { state.withLock { $0.isShuttingDown } }

    /// The number of connections open now.
    var count: Int { state.withLock { $0.channels.count } }

    /// Adds `channel` and returns its connection number; the channel removes itself when it closes. A channel
    /// accepted while the server shuts down is closed at once.
    func register(_ channel: any Channel) -> Int {
        let (id, refused) = state.withLock { state -> (Int, Bool) in
            let id = state.nextID
            state.nextID += 1
            if state.isShuttingDown { return (id, true) }
            state.channels[id] = channel
            return (id, false)
        }
        if refused {
            channel.close(promise: nil)
        } else {
            channel.closeFuture.whenComplete { [self] _ in
                _ = state.withLock { $0.channels.removeValue(forKey: id) }
            }
        }
        return id
    }

    /// Closes every open connection and waits until they are closed.
    func closeAll() async {
        let channels = state.withLock { state in
            state.isShuttingDown = true
            return Array(state.channels.values)
        }
        for channel in channels {
            try? await channel.close()
        }
    }
}
