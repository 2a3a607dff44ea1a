import Foundation

/// Where a Redis server is and how to talk to it.
public struct RedisConfiguration: Sendable {
    /// How to reach the server.
    public enum Address: Sendable, Equatable, CustomStringConvertible {
        /// TCP to `host:port`.
        case tcp(host: String, port: Int)
        /// A unix domain socket at `path`.
        case unixSocket(path: String)

        /// `host:port` or `unix:PATH`, for logs (never the password).
        public var description: String {
            switch self {
            case .tcp(let host, let port): "\(host):\(port)"
            case .unixSocket(let path): "unix:\(path)"
            }
        }
    }

    /// TLS for the connection (Redis's `tls-port`).
    public struct TLS: Sendable, Equatable {
        /// A PEM file of the certificates to trust; `nil` trusts the system's roots.
        public var trustRootsFile: String?
        /// The name the server's certificate must carry (and the SNI sent); `nil` checks the address connected to.
        public var serverHostname: String?

        /// TLS trusting `trustRootsFile` (or the system's roots).
        /// - Parameters:
        ///   - trustRootsFile: a PEM file of trusted certificates, or `nil` for the system's.
        ///   - serverHostname: the name to verify, or `nil` for the address.
        public init(trustRootsFile: String? = nil, serverHostname: String? = nil) {
            self.trustRootsFile = trustRootsFile
            self.serverHostname = serverHostname
        }
    }

    /// How to reach the server.
    public var address: Address
    /// TLS, or `nil` for a plain connection.
    public var tls: TLS?
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
    ///   - tls: TLS settings, or `nil` for a plain connection.
    ///   - user: the ACL user, or `nil`.
    ///   - password: the password, or `nil` for none.
    ///   - database: the database number (default 0).
    ///   - poolSize: connections kept open (default 2).
    ///   - operationTimeout: the per-command timeout (default 250 ms).
    ///   - connectTimeout: the connect timeout (default 250 ms).
    ///   - breakerFailureThreshold: failures in a row that open the breaker (default 3).
    ///   - breakerOpenDuration: how long the breaker stays open (default 5 s).
    ///   - maxReplyBytes: the largest reply accepted (default 9 MiB).
    public init(address: Address, tls: TLS? = nil, user: String? = nil, password: String? = nil, database: Int = 0, poolSize: Int = 2,
                operationTimeout: Duration = .milliseconds(250), connectTimeout: Duration = .milliseconds(250),
                breakerFailureThreshold: Int = 3, breakerOpenDuration: Duration = .seconds(5),
                maxReplyBytes: Int = 9 << 20) {
        self.address = address
        self.tls = tls
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

    /// A configuration from a URL: `redis://[user[:password]@]host[:port][/database]`, the same with `rediss://`
    /// for TLS (`?ca=/path/to/ca.pem` names the certificates to trust instead of the system's), or
    /// `unix:///path/to/redis.sock[?password=…&user=…&db=…]`.
    /// - Parameter string: the URL.
    /// - Throws: ``RedisClientError/invalidURL(_:)`` when it is neither form.
    public init(url string: String) throws(RedisClientError) {
        guard let components = URLComponents(string: string) else { throw .invalidURL(string) }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        switch components.scheme {
        case "redis", "rediss":
            guard let host = components.host, !host.isEmpty else { throw .invalidURL(string) }
            let database = Int(components.path.dropFirst()) ?? 0
            self.init(address: .tcp(host: host, port: components.port ?? 6379),
                      user: components.user.flatMap { $0.isEmpty ? nil : $0.removingPercentEncoding },
                      password: components.password?.removingPercentEncoding ?? query["password"], database: database)
            if components.scheme == "rediss" {
                // An IP address is checked against the certificate's addresses; a name is also sent as SNI.
                let isAddress = host.allSatisfy { $0.isNumber || $0 == "." || $0 == ":" }
                tls = TLS(trustRootsFile: query["ca"], serverHostname: isAddress ? nil : host)
            }
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
