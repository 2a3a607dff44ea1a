import NIOCore
import NIOSSL

/// A command on its way out, with the promise its reply completes.
struct RedisRequest: Sendable {
    let command: RedisCommand
    let promise: EventLoopPromise<RESPValue>
}

/// Matches replies to commands on one connection: Redis answers in order, so the replies complete the
/// promises first in, first out, which lets many commands be in flight at once (pipelining). When the
/// connection fails or closes, every pending command fails with it. Runs on the channel's event loop.
final class RedisConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = RESPValue
    typealias OutboundIn = RedisRequest
    typealias OutboundOut = ByteBuffer

    private var pending = CircularBuffer<EventLoopPromise<RESPValue>>()

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        var buffer = context.channel.allocator.buffer(capacity: 64 + request.command.arguments.reduce(0) { $0 + $1.readableBytes })
        request.command.encode(into: &buffer)
        pending.append(request.promise)
        context.write(wrapOutboundOut(buffer), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let value = unwrapInboundIn(data)
        guard let promise = pending.popFirst() else {
            // A reply nobody asked for: the stream is out of step, and no later reply can be trusted.
            return context.close(promise: nil)
        }
        promise.succeed(value)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let failure: RedisClientError = switch error {
        case let error as RedisClientError: error
        case is NIOSSLError, is BoringSSLError: .tlsFailed("\(error)")
        default: .protocolViolation("\(error)")
        }
        failAll(failure)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(.connectionClosed)
        context.fireChannelInactive()
    }

    private func failAll(_ error: RedisClientError) {
        while let promise = pending.popFirst() { promise.fail(error) }
    }
}
