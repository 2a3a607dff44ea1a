import NIOCore
import NIOPosix
import ImagePipelineKit
import PipelineLocking

/// A small Redis client (RESP2) on SwiftNIO: a pool of connections over TCP or a unix socket, commands pipelined
/// on them, `AUTH` with an ACL user, a timeout on every command, and a circuit breaker that skips the server
/// for a while after repeated failures. Safe to use from any thread.
public final class RedisClient: Sendable {
    /// The configuration it was made with.
    public let configuration: RedisConfiguration
    private let group: any EventLoopGroup
    private let breaker: RedisCircuitBreaker
    /// One slot per pooled connection: a connection being made, or made (checked for liveness at each use).
    private let slots: Locked<[Task<RedisConnection, any Error>?]>
    private let nextSlot = Locked(0)

    /// A client for the server `configuration` names. Nothing connects until the first command.
    /// - Parameters:
    ///   - configuration: the server and the client's limits.
    ///   - group: the event loops the connections run on (default: NIO's shared singleton).
    public init(configuration: RedisConfiguration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.configuration = configuration
        self.group = group
        breaker = RedisCircuitBreaker(threshold: configuration.breakerFailureThreshold,
                                      openDuration: configuration.breakerOpenDuration)
        slots = Locked(Array(repeating: nil, count: configuration.poolSize))
    }

    /// How often the circuit breaker opened.
    public var circuitBreakerOpenings: Int { breaker.openings }

    /// Whether the circuit breaker skips the server now.
    public var isCircuitOpen: Bool { breaker.isOpen }

    /// Sends a command and returns its reply (an error reply included: ``RESPValue/error(_:)``).
    /// - Parameters:
    ///   - name: the command, such as `GET`.
    ///   - arguments: its arguments, as strings.
    /// - Throws: ``RedisClientError`` when the server could not be asked, or ``ImagePipelineKit/SharedCacheCircuitOpenError``
    ///   while the circuit breaker is open.
    public func send(_ name: String, _ arguments: [String]) async throws -> RESPValue {
        try await send(RedisCommand(name, arguments.map(RedisArgument.string)))
    }

    /// Sends a command whose arguments are bytes (a value to `SET`, say).
    /// - Parameters:
    ///   - name: the command.
    ///   - arguments: its arguments, as bytes.
    /// - Throws: ``RedisClientError`` or ``ImagePipelineKit/SharedCacheCircuitOpenError``, as for string arguments.
    public func send(_ name: String, bytes arguments: [ByteBuffer]) async throws -> RESPValue {
        try await send(RedisCommand(name, arguments.map(RedisArgument.bytes)))
    }

    /// Sends a command whose arguments include bytes.
    func send(_ name: String, _ arguments: [RedisArgument]) async throws -> RESPValue {
        try await send(RedisCommand(name, arguments))
    }

    private func send(_ command: RedisCommand) async throws -> RESPValue {
        do {
            try breaker.admit()
        } catch {
            throw SharedCacheCircuitOpenError(retryAfter: configuration.breakerOpenDuration)
        }
        do {
            let connection = try await connection()
            let reply = try await connection.send(command)
            breaker.recordSuccess()
            return reply
        } catch {
            breaker.recordFailure()
            throw error
        }
    }

    /// A live connection from the pool, made when its slot has none (callers that meet a slot being made wait
    /// for it rather than connecting again).
    private func connection() async throws -> RedisConnection {
        let configuration = configuration
        let group = group
        let index = nextSlot.withLock { next in
            defer { next = (next + 1) % configuration.poolSize }
            return next
        }
        for _ in 0..<2 {
            let task = slots.withLock { slots -> Task<RedisConnection, any Error> in
                if let task = slots[index] { return task }
                let task = Task { try await RedisConnection.connect(configuration, group: group) }
                slots[index] = task
                return task
            }
            do {
                let connection = try await task.value
                if connection.isActive { return connection }
                forget(task, at: index)
            } catch {
                forget(task, at: index)
                throw error
            }
        }
        throw RedisClientError.connectionClosed
    }

    private func forget(_ task: Task<RedisConnection, any Error>, at index: Int) {
        slots.withLock { slots in
            if slots[index] == task { slots[index] = nil }
        }
    }

    /// Closes every pooled connection; later commands connect again.
    public func close() async {
        let tasks = slots.withLock { slots in
            defer { slots = Array(repeating: nil, count: slots.count) }
            return slots.compactMap { $0 }
        }
        for task in tasks { (try? await task.value)?.close() }
    }
}
