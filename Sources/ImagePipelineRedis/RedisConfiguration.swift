import Foundation

/// Where a Redis server is and how to talk to it.
public struct RedisConfiguration: Sendable {
    /// How to reach the server.
    public enum Address: Sendable, Equatable {
        /// TCP to `host:port`.
        case tcp(host: String, port: Int)
        /// A unix domain socket at `path`.
        case unixSocket(path: String)
    }

    /// How to reach the server.
    public var address: Address
    /// The ACL user for `AUTH`; `nil` authenticates as the default user when there is a password.
    public var user: String?
    /// The password for `AUTH`; `nil` sends no `AUTH`.
    public var password: String?
    /// The database `SELECT`ed after connecting (0, Redis's default, sends nothing).
    public var database: Int
    /// Connections kept open; commands are pipelined on them. Default 2.
    public var poolSize: Int
    /// The longest one command waits for its reply before the client gives up and closes the connection.
    /// Default 250 ms.
    public var operationTimeout: Duration
    /// The longest a connection (with its `AUTH`) may take. Default 250 ms.
    public var connectTimeout: Duration
    /// Failures in a row that open the circuit breaker. Default 3.
    public var breakerFailureThreshold: Int
    /// How long the open breaker skips the server before it lets one command try again. Default 5 s.
    public var breakerOpenDuration: Duration
    /// The largest bulk reply accepted (a value larger than this is refused unread). Default 9 MiB: the
    /// default 8 MiB value limit plus its header.
    public var maxReplyBytes: Int

    /// A configuration for the server at `address`.
    /// - Parameters:
    ///   - address: how to reach the server.
    ///   - user: the ACL user, or `nil`.
    ///   - password: the password, or `nil` for none.
    ///   - database: the database number (default 0).
    ///   - poolSize: connections kept open (default 2).
    ///   - operationTimeout: the per-command timeout (default 250 ms).
    ///   - connectTimeout: the connect timeout (default 250 ms).
    ///   - breakerFailureThreshold: failures in a row that open the breaker (default 3).
    ///   - breakerOpenDuration: how long the breaker stays open (default 5 s).
    ///   - maxReplyBytes: the largest reply accepted (default 9 MiB).
    public init(address: Address, user: String? = nil, password: String? = nil, database: Int = 0, poolSize: Int = 2,
                operationTimeout: Duration = .milliseconds(250), connectTimeout: Duration = .milliseconds(250),
                breakerFailureThreshold: Int = 3, breakerOpenDuration: Duration = .seconds(5),
                maxReplyBytes: Int = 9 << 20) {
        self.address = address
        self.user = user
        self.password = password
        self.database = database
        self.poolSize = max(1, poolSize)
        self.operationTimeout = operationTimeout
        self.connectTimeout = connectTimeout
        self.breakerFailureThreshold = max(1, breakerFailureThreshold)
        self.breakerOpenDuration = breakerOpenDuration
        self.maxReplyBytes = maxReplyBytes
    }

    /// A configuration from a URL: `redis://[user[:password]@]host[:port][/database]`, or
    /// `unix:///path/to/redis.sock[?password=…&user=…&db=…]`.
    /// - Parameter string: the URL.
    /// - Throws: ``RedisClientError/invalidURL(_:)`` when it is neither form.
    public init(url string: String) throws(RedisClientError) {
        guard let components = URLComponents(string: string) else { throw .invalidURL(string) }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        switch components.scheme {
        case "redis":
            guard let host = components.host, !host.isEmpty else { throw .invalidURL(string) }
            let database = Int(components.path.dropFirst()) ?? 0
            self.init(address: .tcp(host: host, port: components.port ?? 6379),
                      user: components.user.flatMap { $0.isEmpty ? nil : $0.removingPercentEncoding },
                      password: components.password?.removingPercentEncoding ?? query["password"], database: database)
        case "unix":
            guard !components.path.isEmpty else { throw .invalidURL(string) }
            self.init(address: .unixSocket(path: components.path), user: query["user"], password: query["password"],
                      database: query["db"].flatMap(Int.init) ?? 0)
        default:
            throw .invalidURL(string)
        }
    }
}

extension Duration {
    /// Whole milliseconds, for NIO's `TimeAmount` and for messages.
    var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
