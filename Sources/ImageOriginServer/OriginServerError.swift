/// Errors of ``ImageOriginServer`` itself (binding failures are NIO's `IOError`, passed through).
public enum OriginServerError: Error, Equatable, CustomStringConvertible {
    /// ``ImageOriginServer/waitForCompletedRequests(count:timeout:)`` ran out of time.
    case timedOut(expected: Int, completed: Int)
    /// The directory given to ``ImageOriginServer/start(port:directory:)`` is missing or not a directory.
    case notADirectory(String)
    /// The server was shut down while a caller was waiting for requests.
    case shutDown

    public var description: String {
        switch self {
        case .timedOut(let expected, let completed):
            "timed out waiting for \(expected) completed requests (\(completed) completed)"
        case .notADirectory(let path): "not a directory: \(path)"
        case .shutDown: "the origin server has shut down"
        }
    }
}
