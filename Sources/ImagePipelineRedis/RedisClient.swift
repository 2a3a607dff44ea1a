import CoreMetrics
import ImagePipelineKit
import Logging
import NIOCore
import NIOPosix
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
    private let logger: Logger?
    private let commandTimers: RedisCommandTimers

    /// A client for the server `configuration` names. Nothing connects until the first command.
    /// - Parameters:
    ///   - configuration: the server and the client's limits.
    ///   - group: the event loops the connections run on (default: NIO's shared singleton).
    ///   - logger: where connections made and lost, and the circuit breaker opening and closing, are logged
    ///     (`notice` and `warning`); `nil` logs nothing.
    ///   - metricsFactory: where each command's time goes (`image_pipeline_redis_command_duration`, a timer with
    ///     `command` and `result` (`ok`, `failed`)); by default swift-metrics' bootstrapped factory.
    public init(configuration: RedisConfiguration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
                logger: Logger? = nil, metricsFactory: (any MetricsFactory)? = nil) {
        self.configuration = configuration
        self.group = group
        self.logger = logger
        commandTimers = RedisCommandTimers(factory: metricsFactory)
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
        let started = ContinuousClock.now
        do {
            let connection = try await connection()
            let reply = try await connection.send(command)
            commandTimers.record(command.name, ok: true, since: started)
            if breaker.recordSuccess() {
                logger?.notice("redis circuit breaker closed", metadata: ["redis": .string(configuration.address.description)])
            }
            return reply
        } catch {
            commandTimers.record(command.name, ok: false, since: started)
            if breaker.recordFailure() {
                logger?.warning("redis circuit breaker opened: commands skip the server", metadata: [
                    "redis": .string(configuration.address.description), "error": .string("\(error)"),
                    "retry-after": .string("\(configuration.breakerOpenDuration)"),
                ])
            }
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
            let logger = logger
            let task = slots.withLock { slots -> Task<RedisConnection, any Error> in
                if let task = slots[index] { return task }
                let task = Task {
                    do {
                        let connection = try await RedisConnection.connect(configuration, group: group)
                        logger?.notice("redis connection made", metadata: [
                            "redis": .string(configuration.address.description), "slot": .stringConvertible(index),
                        ])
                        return connection
                    } catch {
                        logger?.warning("redis connection failed", metadata: [
                            "redis": .string(configuration.address.description), "error": .string("\(error)"),
                        ])
                        throw error
                    }
                }
                slots[index] = task
                return task
            }
            do {
                let connection = try await task.value
                if connection.isActive { return connection }
                logger?.notice("redis connection lost", metadata: [
                    "redis": .string(configuration.address.description), "slot": .stringConvertible(index),
                ])
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

/// The time of each command (`image_pipeline_redis_command_duration`).
private struct RedisCommandTimers: Sendable {
    let factory: (any MetricsFactory)?

    func record(_ command: String, ok: Bool, since started: ContinuousClock.Instant) {
        Timer(label: "image_pipeline_redis_command_duration", dimensions: [("command", command), ("result", ok ? "ok" : "failed")],
              factory: factory ?? MetricsSystem.factory).recordSeconds((ContinuousClock.now - started) / .seconds(1))
    }
}
