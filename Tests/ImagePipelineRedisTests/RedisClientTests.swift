import Foundation
import Logging
import MetricsTestKit
import ImageOriginServer
import ImagePipelineKit
import ImagePipelineRedis
import NIOCore
import Testing
import TestSupport

@Suite("The RESP client against a real redis-server", .serialized,
       .enabled(if: LocalRedisServer.executablePath != nil, "redis-server is not installed"))
struct RedisClientTests {
    /// Runs `body` with a private server, which is stopped afterwards whatever `body` threw.
    private func withServer(unixSocket: Bool = false, _ body: (LocalRedisServer) async throws -> Void) async throws {
        let server = try await LocalRedisServer.start(unixSocket: unixSocket)
        var failure: (any Error)?
        do { try await body(server) } catch { failure = error }
        await server.stop()
        if let failure { throw failure }
    }

    @Test("A redis-server started here holds none of this process's sockets")
    func childInheritsNoSockets() async throws {
        // A listening origin: SwiftNIO opens its sockets without close-on-exec, so a child that inherited them
        // would keep the origin's port open after the origin shut down.
        let origin = try await ImageOriginServer.start(port: 0)
        let ours = Self.socketInodes(ofProcess: "self")
        #expect(!ours.isEmpty)
        var failure: (any Error)?
        do {
            try await withServer { (server: LocalRedisServer) async throws in
                let theirs = Self.socketInodes(ofProcess: "\(server.pid)")
                #expect(!theirs.isEmpty, "the server's own listening socket")
                #expect(ours.isDisjoint(with: theirs), "inherited: \(ours.intersection(theirs))")
            }
        } catch { failure = error }
        try await origin.shutdown()
        if let failure { throw failure }
    }

    /// The sockets a process has open, as `/proc/PID/fd` names them (`socket:[inode]`). Compared by inode, not
    /// by whether a port still answers: another test may take a freed port at once.
    private static func socketInodes(ofProcess process: String) -> Set<String> {
        let directory = "/proc/\(process)/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return Set(names.compactMap { name in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(name)"),
                  target.hasPrefix("socket:") else { return nil }
            return target
        })
    }

    @Test("SET and GET round-trip bytes over TCP, with AUTH")
    func roundTripOverTCP() async throws {
        try await withServer { (server: LocalRedisServer) async throws in
            let client = RedisClient(configuration: TierHarness.patientConfiguration(server))
            #expect(try await client.send("SET", ["greeting", "hello"]) == .simpleString("OK"))
            #expect(try await client.send("GET", ["greeting"]) == .bulkString(ByteBuffer(string: "hello")))
            #expect(try await client.send("GET", ["absent"]) == .bulkString(nil))
            await client.close()
        }
    }

    @Test("The same over a unix socket")
    func roundTripOverUnixSocket() async throws {
        try await withServer(unixSocket: true) { (server: LocalRedisServer) async throws in
            let client = RedisClient(configuration: TierHarness.patient(try RedisConfiguration(url: server.url)))
            #expect(try await client.send("SET", ["k", "v"]) == .simpleString("OK"))
            #expect(try await client.send("GET", ["k"]) == .bulkString(ByteBuffer(string: "v")))
            await client.close()
        }
    }

    @Test("A thousand commands in flight at once on two connections each get their own reply")
    func pipelinedCommandsKeepTheirReplies() async throws {
        try await withServer { (server: LocalRedisServer) async throws in
            let client = RedisClient(configuration: TierHarness.patientConfiguration(server))
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<1000 {
                    group.addTask {
                        _ = try await client.send("SET", ["key\(index)", "value\(index)"])
                        return try await client.send("GET", ["key\(index)"]) == .bulkString(ByteBuffer(string: "value\(index)"))
                    }
                }
                let matches = try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
                #expect(matches == 1000)
            }
            await client.close()
        }
    }

    @Test("The client logs its connection and the circuit breaker's trips, and times each command")
    func logsAndTimes() async throws {
        let messages = Recorded<(Logger.Level, String)>()
        var logger = Logger(label: "redis-test") { _ in CapturingLogHandler(messages: messages) }
        logger.logLevel = .trace
        let metrics = TestMetrics()
        let server = try await LocalRedisServer.start()
        var configuration = TierHarness.patientConfiguration(server)
        configuration.breakerFailureThreshold = 2
        let client = RedisClient(configuration: configuration, logger: logger, metricsFactory: metrics)
        #expect(try await client.send("PING", [String]()) == .simpleString("PONG"))
        #expect(messages.all.contains { $0.0 == .notice && $0.1.hasPrefix("redis connection made") })
        #expect(try metrics.expectTimer("image_pipeline_redis_command_duration", [("command", "PING"), ("result", "ok")])
                .values.count == 1)
        await server.stop()
        for _ in 0..<3 { _ = try? await client.send("PING", [String]()) }
        #expect(client.isCircuitOpen)
        let warnings = messages.all.filter { $0.0 == .warning }.map(\.1)
        #expect(warnings.contains { $0.hasPrefix("redis circuit breaker opened") }, "\(warnings)")
        #expect(try metrics.expectTimer("image_pipeline_redis_command_duration", [("command", "PING"), ("result", "failed")])
                .values.count >= 2)
        await client.close()
    }

    @Test("A wrong password is a typed authentication error")
    func wrongPasswordIsTyped() async throws {
        try await withServer { (server: LocalRedisServer) async throws in
            var configuration = TierHarness.patientConfiguration(server)
            configuration.password = "not-the-password"
            let client = RedisClient(configuration: configuration)
            await #expect {
                _ = try await client.send("PING", [String]())
            } throws: { error in
                if case .authenticationFailed = error as? RedisClientError { return true }
                return false
            }
        }
    }

    @Test("TLS: a round trip through the server's TLS port, trusting its certificate",
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "openssl makes the certificate"))
    func roundTripOverTLS() async throws {
        let server = try await LocalRedisServer.start(tls: true)
        var failure: (any Error)?
        do {
            let client = RedisClient(configuration: TierHarness.patient(try RedisConfiguration(url: server.url)))
            #expect(try await client.send("SET", ["k", "over tls"]) == .simpleString("OK"))
            #expect(try await client.send("GET", ["k"]) == .bulkString(ByteBuffer(string: "over tls")))
            await client.close()
        } catch { failure = error }
        await server.stop()
        if let failure { throw failure }
    }

    @Test("Wrong TLS: a TLS client against a plain port is a typed TLS error")
    func tlsAgainstPlainPort() async throws {
        try await withServer { (server: LocalRedisServer) async throws in
            var configuration = TierHarness.patientConfiguration(server)
            configuration.tls = RedisConfiguration.TLS()
            let client = RedisClient(configuration: configuration)
            await #expect {
                _ = try await client.send("PING", [String]())
            } throws: { error in
                if case .tlsFailed = error as? RedisClientError { return true }
                return false
            }
        }
    }

    @Test("URLs name TCP and unix-socket servers; anything else is an invalid URL")
    func urls() throws {
        let tcp = try RedisConfiguration(url: "redis://fleet:s3cret@10.1.2.3:6380/2")
        #expect(tcp.address == .tcp(host: "10.1.2.3", port: 6380))
        #expect(tcp.user == "fleet" && tcp.password == "s3cret" && tcp.database == 2)
        let unix = try RedisConfiguration(url: "unix:///run/redis.sock?password=pw")
        #expect(unix.address == .unixSocket(path: "/run/redis.sock") && unix.password == "pw")
        let secure = try RedisConfiguration(url: "rediss://:pw@cache.internal:6380?ca=/etc/ca.pem")
        #expect(secure.tls == RedisConfiguration.TLS(trustRootsFile: "/etc/ca.pem", serverHostname: "cache.internal"))
        #expect(throws: RedisClientError.self) { try RedisConfiguration(url: "http://example.com") }
    }
}

