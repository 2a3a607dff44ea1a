/// Why a Redis command failed. Every one of them is a miss for the pipeline, never a failed fetch.
public enum RedisClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No connection could be made (refused, unreachable, no such socket file) within the connect timeout.
    case connectFailed(String)
    /// The TLS handshake failed: the server speaks no TLS, or its certificate is not trusted or not for this name.
    case tlsFailed(String)
    /// The server refused the user or password (`WRONGPASS`, `NOAUTH`), or asked for one that was not given.
    case authenticationFailed(String)
    /// No reply within the per-operation timeout (a stalled or overloaded server); the connection was closed.
    case timedOut(command: String, milliseconds: Int)
    /// The connection closed before the reply came.
    case connectionClosed
    /// The server answered with an error reply.
    case serverError(String)
    /// The reply was not RESP, or not the reply the command has.
    case protocolViolation(String)
    /// A bulk reply was larger than the client accepts.
    case replyTooLarge(bytes: Int, limit: Int)
    /// The URL could not be read as a Redis address.
    case invalidURL(String)

    /// Says what failed, for logs and problems.
    public var description: String {
        switch self {
        case .connectFailed(let reason): "connect failed: \(reason)"
        case .tlsFailed(let reason): "TLS failed: \(reason)"
        case .authenticationFailed(let reason): "authentication failed: \(reason)"
        case .timedOut(let command, let milliseconds): "\(command) timed out after \(milliseconds) ms"
        case .connectionClosed: "connection closed"
        case .serverError(let message): "server error: \(message)"
        case .protocolViolation(let reason): "protocol violation: \(reason)"
        case .replyTooLarge(let bytes, let limit): "reply of \(bytes) bytes exceeds the limit of \(limit)"
        case .invalidURL(let url): "invalid Redis URL: \(url)"
        }
    }
}
