import Foundation

/// What the server saw and did for one request: one entry of ``ImageOriginServer/requestLog``.
///
/// A record enters the log as soon as the request has been read (so `requestLog.count` counts requests a
/// client has sent and seen answered) and is updated until the exchange ends; ``isComplete`` says when
/// ``bytesSent`` and ``clientWentAway`` are final. Wait for that with
/// ``ImageOriginServer/waitForCompletedRequests(count:timeout:)`` rather than sleeping.
public struct OriginRequestRecord: Sendable {
    /// Position in the server's lifetime, from 1, in the order requests were read. ``ImageOriginServer/clearLog()``
    /// does not restart it.
    public let sequence: Int
    /// Which connection carried the request, from 1 in accept order: two requests with the same number
    /// shared a kept-alive connection.
    public let connection: Int
    /// The method as sent, e.g. `GET`.
    public let method: String
    /// The path as sent (still percent-encoded), without the query, e.g. `/a.jpg`.
    public let path: String
    /// The query after `?`, as sent, or `nil` when the target had no `?`.
    public let query: String?
    /// Every request header in the order received, names as the client spelled them.
    public let headers: [(name: String, value: String)]
    /// When the request had been read.
    public let receivedAt: Date
    /// The status sent in the response head (0 until the response is planned, or when the client left first).
    public internal(set) var status: Int
    /// Body bytes the server handed to the kernel for this response (head bytes not counted).
    public internal(set) var bytesSent: Int
    /// The most body bytes this response ever had queued in the server beyond what the kernel had taken: the
    /// proof of back-pressure (it stays near one chunk plus NIO's write-buffer water mark, whatever the body size).
    public internal(set) var peakQueuedBytes: Int
    /// Whether the client closed or reset the connection before the response was complete. `false` when the
    /// server ended it on purpose (a close or reset fault, or ``ImageOriginServer/shutdown()``).
    public internal(set) var clientWentAway: Bool
    /// Whether the exchange has ended (response finished, connection closed, or client gone).
    public internal(set) var isComplete: Bool
    /// When the exchange ended; `nil` until ``isComplete``.
    public internal(set) var completedAt: Date?

    /// The first value of the header `name` (case-insensitive), or `nil`.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The `Range` header, or `nil`.
    public var range: String? { header("Range") }
    /// The `If-Range` header, or `nil`.
    public var ifRange: String? { header("If-Range") }
    /// The `Authorization` header, or `nil`.
    public var authorization: String? { header("Authorization") }
    /// The path and, when there was one, `?` and the query: the request target as sent.
    public var target: String { query.map { "\(path)?\($0)" } ?? path }

    init(sequence: Int, connection: Int, method: String, path: String, query: String?,
         headers: [(name: String, value: String)], receivedAt: Date) {
        self.sequence = sequence
        self.connection = connection
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.receivedAt = receivedAt
        status = 0
        bytesSent = 0
        peakQueuedBytes = 0
        clientWentAway = false
        isComplete = false
        completedAt = nil
    }
}
