import NIOCore
import NIOSSL
import NIOTLS

/// Tells when a connection's TLS handshake completed, so that a connection to a port that speaks no TLS (a plain
/// Redis port answers a ClientHello with silence) fails as a TLS error at the connect timeout instead of as a
/// timed-out command. Runs on the channel's event loop.
final class TLSHandshakeWatcher: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    private let handshake: EventLoopPromise<Void>

    init(eventLoop: any EventLoop) {
        handshake = eventLoop.makePromise()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent { handshake.succeed() }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        handshake.fail(RedisClientError.tlsFailed("\(error)"))
        context.fireErrorCaught(error)
    }

    // A channel whose connect failed is torn down without ever being active: the promise must not outlive it
    // (completing a completed promise does nothing).
    func handlerRemoved(context: ChannelHandlerContext) {
        handshake.fail(RedisClientError.tlsFailed("connection closed before the handshake"))
    }

    func channelInactive(context: ChannelHandlerContext) {
        handshake.fail(RedisClientError.tlsFailed("connection closed during the handshake"))
        context.fireChannelInactive()
    }

    /// Waits for the handshake, at most `timeout`; closes the channel when it does not come.
    func completed(within timeout: Duration, on channel: any Channel) async throws(RedisClientError) {
        let milliseconds = timeout.wholeMilliseconds
        let timer = channel.eventLoop.scheduleTask(in: .milliseconds(milliseconds)) { [handshake] in
            handshake.fail(RedisClientError.tlsFailed("no TLS handshake within \(milliseconds) ms (is the port TLS?)"))
            channel.close(promise: nil)
        }
        defer { timer.cancel() }
        do {
            try await handshake.futureResult.get()
        } catch let error as RedisClientError {
            throw error
        } catch {
            throw .tlsFailed("\(error)")
        }
    }
}
