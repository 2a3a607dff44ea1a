import Foundation
import NIOCore
import NIOPosix

/// A private `redis-server` process in a temporary directory, for tests, demos and development: no
/// persistence (`--save ''`, no append-only file), a password, TCP on a free loopback port or a unix socket.
/// Stopped by its process id, never by name.
public final class LocalRedisServer: Sendable {
    /// The server's process id.
    public let pid: Int32
    /// The loopback TCP port, or `nil` when it listens on a unix socket only.
    public let port: Int?
    /// The unix socket's path, when it listens on one.
    public let socketPath: String?
    /// The password it requires.
    public let password: String
    /// Its working directory (removed by ``stop()``).
    public let directory: URL
    /// The self-signed certificate (PEM) the server presents on a TLS port, or `nil` without TLS.
    public let certificateFile: String?
    private let process: ChildProcess

    private init(process: ChildProcess, port: Int?, socketPath: String?, password: String, directory: URL,
                 certificateFile: String?) {
        self.certificateFile = certificateFile
        self.process = process
        pid = process.pid
        self.port = port
        self.socketPath = socketPath
        self.password = password
        self.directory = directory
    }

    /// Why the server did not start.
    public enum StartError: Error, CustomStringConvertible {
        /// `redis-server` is not installed (`scripts/install-system-deps.sh` installs it).
        case notInstalled
        /// It did not answer `PING` within the wait.
        case notReady(output: String)
        /// `openssl` could not make the TLS certificate.
        case certificateNotMade
        /// Another process took the free port first (tried again a few times before this is thrown).
        case portTaken

        /// Says why.
        public var description: String {
            switch self {
            case .notInstalled: "redis-server is not installed"
            case .notReady(let output): "redis-server did not become ready: \(output)"
            case .certificateNotMade: "openssl could not make a certificate for the TLS port"
            case .portTaken: "another process took the port"
            }
        }
    }

    /// The `redis-server` on `PATH`, or `nil`.
    public static var executablePath: String? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/usr/local/bin").split(separator: ":")
        return (directories + ["/usr/bin", "/usr/sbin"]).map { "\($0)/redis-server" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts a server and waits (up to 10 s) until it answers.
    /// - Parameters:
    ///   - password: the password it requires (default: a random one).
    ///   - unixSocket: listen on a unix socket in its directory instead of TCP.
    ///   - maxMemoryBytes: `maxmemory` with the `allkeys-lru` policy, or `nil` for no limit.
    ///   - tls: serve TLS only, with a self-signed certificate for 127.0.0.1 made by `openssl`
    ///     (``certificateFile``).
    /// - Throws: ``StartError``, or the error of launching the process.
    public static func start(password: String = "pw-\(UInt64.random(in: 0...UInt64.max))", unixSocket: Bool = false,
                             maxMemoryBytes: Int? = nil, tls: Bool = false) async throws -> LocalRedisServer {
        // A free port can be taken by another process between the look and redis-server's bind: try another.
        var attempt = 1
        while true {
            do {
                return try await startOnce(password: password, unixSocket: unixSocket, maxMemoryBytes: maxMemoryBytes, tls: tls)
            } catch StartError.portTaken where attempt < 5 {
                attempt += 1
            }
        }
    }

    private static func startOnce(password: String, unixSocket: Bool, maxMemoryBytes: Int?, tls: Bool) async throws
        -> LocalRedisServer {
        guard let executable = executablePath else { throw StartError.notInstalled }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let port = unixSocket ? nil : try await freePort()
        let socketPath = unixSocket ? directory.appendingPathComponent("redis.sock").path : nil
        var arguments = ["--port", "\(port ?? 0)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                         "--requirepass", password, "--dir", directory.path, "--daemonize", "no",
                         "--logfile", directory.appendingPathComponent("redis.log").path]
        if let socketPath { arguments += ["--unixsocket", socketPath, "--unixsocketperm", "700"] }
        if let maxMemoryBytes { arguments += ["--maxmemory", "\(maxMemoryBytes)", "--maxmemory-policy", "allkeys-lru"] }
        var certificateFile: String?
        if tls, let port {
            let certificate = directory.appendingPathComponent("cert.pem").path
            let key = directory.appendingPathComponent("key.pem").path
            try makeCertificate(certificate: certificate, key: key)
            certificateFile = certificate
            arguments[1] = "0"
            arguments += ["--tls-port", "\(port)", "--tls-cert-file", certificate, "--tls-key-file", key,
                          "--tls-ca-cert-file", certificate, "--tls-auth-clients", "no"]
        }
        let process = try ChildProcess(executable: executable, arguments: arguments)
        let server = LocalRedisServer(process: process, port: port, socketPath: socketPath, password: password,
                                      directory: directory, certificateFile: certificateFile)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, process.isRunning {
            if await server.answersPing() { return server }
            try await Task.sleep(for: .milliseconds(50))
        }
        let log = (try? String(contentsOf: directory.appendingPathComponent("redis.log"), encoding: .utf8)) ?? ""
        await server.stop()
        if log.contains("Address already in use") { throw StartError.portTaken }
        throw StartError.notReady(output: String(log.suffix(2000)))
    }

    /// Where the server is, with its password, as a URL for ``RedisConfiguration/init(url:)``.
    public var url: String {
        if let socketPath { return "unix://\(socketPath)?password=\(password)" }
        if let certificateFile { return "rediss://:\(password)@127.0.0.1:\(port ?? 0)?ca=\(certificateFile)" }
        return "redis://:\(password)@127.0.0.1:\(port ?? 0)"
    }

    /// A client configuration for the server (its password included).
    public var configuration: RedisConfiguration {
        let address: RedisConfiguration.Address = socketPath.map { .unixSocket(path: $0) } ?? .tcp(host: "127.0.0.1", port: port ?? 0)
        return RedisConfiguration(address: address, tls: certificateFile.map { RedisConfiguration.TLS(trustRootsFile: $0) },
                                  password: password)
    }

    /// Whether the server answers `PING` now.
    public func answersPing() async -> Bool {
        var configuration = configuration
        configuration.poolSize = 1
        configuration.connectTimeout = .milliseconds(500)
        configuration.operationTimeout = .milliseconds(500)
        let client = RedisClient(configuration: configuration)
        defer { Task { await client.close() } }
        return (try? await client.send("PING", [String]())) == .simpleString("PONG")
    }

    /// Stops the server (`SIGSTOP`): it keeps its connections but answers nothing.
    public func pause() { process.signal(SIGSTOP) }

    /// Lets a paused server go on (`SIGCONT`).
    public func resume() { process.signal(SIGCONT) }

    /// Kills the server at once (`SIGKILL`), as a crash would, and waits for it to be gone.
    public func killNow() async {
        process.signal(SIGCONT)
        process.signal(SIGKILL)
        await onThreadOfItsOwn { [process] in process.waitUntilExit() }
    }

    /// Ends the server: `SIGTERM`, then `SIGKILL` after 2 s; removes its directory. The waiting happens on a
    /// thread of its own, never on one of Swift concurrency's few shared threads.
    public func stop() async {
        await onThreadOfItsOwn { [self] in stopBlocking() }
    }

    /// ``stop()`` for code that is not async: blocks the calling thread until the server is gone.
    public func stopBlocking() {
        if process.isRunning {
            process.signal(SIGCONT)
            process.signal(SIGTERM)
            let deadline = Date().addingTimeInterval(2)
            while process.isRunning, Date() < deadline { usleep(10_000) }
            process.signal(SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    private func onThreadOfItsOwn(_ work: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                work()
                continuation.resume()
            }
        }
    }

    /// A self-signed certificate for 127.0.0.1 and `localhost`, valid for a day.
    private static func makeCertificate(certificate: String, key: String) throws {
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate,
                             "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-days", "1"]
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        guard openssl.terminationStatus == 0 else { throw StartError.certificateNotMade }
    }

    /// A loopback port nothing listens on now (the kernel's pick for a socket bound to port 0).
    private static func freePort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress?.port ?? 0
        try await channel.close().get()
        return port
    }
}
