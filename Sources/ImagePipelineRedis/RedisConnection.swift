import NIOCore
import NIOPosix
import NIOSSL
import PipelineLocking

/// One connection to Redis, authenticated and ready; commands may be sent on it from any thread, many at once.
final class RedisConnection: Sendable {
    private let channel: any Channel
    private let operationTimeout: Duration

    private init(channel: any Channel, operationTimeout: Duration) {
        self.channel = channel
        self.operationTimeout = operationTimeout
    }

    /// Whether the connection is still open.
    var isActive: Bool { channel.isActive }

    /// Connects to the configured server, then sends `AUTH` and `SELECT` as configured.
    /// - Throws: ``RedisClientError/connectFailed(_:)``, ``RedisClientError/authenticationFailed(_:)``, or a
    ///   timeout of the `AUTH`.
    static func connect(_ configuration: RedisConfiguration, group: any EventLoopGroup) async throws(RedisClientError)
        -> RedisConnection {
        let maxReplyBytes = configuration.maxReplyBytes
        let tls: (context: NIOSSLContext, hostname: String?)?
        do {
            tls = try configuration.tls.map { settings in
                var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
                if let file = settings.trustRootsFile { tlsConfiguration.trustRoots = .file(file) }
                return (try NIOSSLContext(configuration: tlsConfiguration), settings.serverHostname)
            }
        } catch {
            throw .tlsFailed("\(error)")
        }
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(.milliseconds(configuration.connectTimeout.wholeMilliseconds))
            .channelOption(.socketOption(.so_keepalive), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(
                            try NIOSSLClientHandler(context: tls.context, serverHostname: tls.hostname))
                        try channel.pipeline.syncOperations.addHandler(TLSHandshakeWatcher(eventLoop: channel.eventLoop))
                    }
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RESPDecoder(maxBulkBytes: maxReplyBytes)))
                    try channel.pipeline.syncOperations.addHandler(RedisConnectionHandler())
                }
            }
        let channel: any Channel
        do {
            switch configuration.address {
            case .tcp(let host, let port):
                _ = bootstrap.channelOption(.socketOption(.tcp_nodelay), value: 1)
                channel = try await bootstrap.connect(host: host, port: port).get()
            case .unixSocket(let path):
                channel = try await bootstrap.connect(unixDomainSocketPath: path).get()
            }
        } catch {
            throw .connectFailed("\(error)")
        }
        let connection = RedisConnection(channel: channel, operationTimeout: configuration.connectTimeout)
        do {
            if let handshake = try? await channel.pipeline.handler(type: TLSHandshakeWatcher.self).get() {
                try await handshake.completed(within: configuration.connectTimeout, on: channel)
            }
            if let password = configuration.password {
                let arguments: [RedisArgument] = configuration.user.map { [.string($0), .string(password)] } ?? [.string(password)]
                try await connection.expectOK(RedisCommand("AUTH", arguments), failure: RedisClientError.authenticationFailed)
            }
            if configuration.database != 0 {
                try await connection.expectOK(RedisCommand("SELECT", [.string("\(configuration.database)")]),
                                              failure: RedisClientError.serverError)
            }
        } catch {
            connection.close()
            throw error
        }
        return RedisConnection(channel: channel, operationTimeout: configuration.operationTimeout)
    }

    private func expectOK(_ command: RedisCommand, failure: (String) -> RedisClientError) async throws(RedisClientError) {
        switch try await send(command) {
        case .simpleString: return
        case .error(let message): throw failure(message)
        default: throw .protocolViolation("unexpected reply to \(command.name)")
        }
    }

    /// Sends `command` and waits for its reply, at most the operation timeout; a command that times out
    /// closes the connection (a late reply would be matched to the next command).
    func send(_ command: RedisCommand) async throws(RedisClientError) -> RESPValue {
        let eventLoop = channel.eventLoop
        let reply = eventLoop.makePromise(of: RESPValue.self)
        let outcome = eventLoop.makePromise(of: RESPValue.self)
        let settled = Locked(false)
        let settle: @Sendable (Result<RESPValue, any Error>) -> Void = { result in
            let isFirst = settled.withLock { done in
                defer { done = true }
                return !done
            }
            if isFirst { outcome.completeWith(result) }
        }
        let timeout = operationTimeout
        let channel = self.channel
        let timer = eventLoop.scheduleTask(in: .milliseconds(timeout.wholeMilliseconds)) {
            settle(.failure(RedisClientError.timedOut(command: command.name, milliseconds: Int(timeout.wholeMilliseconds))))
            channel.close(promise: nil)
        }
        reply.futureResult.whenComplete { result in
            timer.cancel()
            settle(result)
        }
        channel.writeAndFlush(RedisRequest(command: command, promise: reply)).whenFailure { error in
            reply.fail(error as? RedisClientError ?? .connectionClosed)
        }
        do {
            return try await outcome.futureResult.get()
        } catch let error as RedisClientError {
            throw error
        } catch {
            throw .connectionClosed
        }
    }

    /// Closes the connection; commands in flight fail.
    func close() {
        channel.close(promise: nil)
    }
}
