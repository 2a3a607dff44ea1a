/// Why the service refused or failed a request: each case is one HTTP status with a short text body.
///
/// Every answer that is not an image is one of these, so that a client, a log line and a metric all name the
/// same reason.
public enum ServiceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 400: the path is not thumbor syntax this service supports, or an option is out of range.
    case badRequest(String)
    /// 403: a missing, unknown or wrong signature, an `unsafe/` URL while those are off, or a source that is
    /// not allowed (its host is not on the allow-list, or it resolves to a refused address).
    case forbidden(String)
    /// 404: the origin answered 404 or 410.
    case sourceNotFound
    /// 413: the source is larger than the byte or pixel limit, or the output would be.
    case tooLarge(String)
    /// 414: the request path is longer than the limit.
    case uriTooLong(Int)
    /// 415: `format()` asks for a format this build cannot encode.
    case unsupportedOutputFormat(String)
    /// 422: the source's bytes are not an image this service can decode.
    case undecodableSource(String)
    /// 502: the origin failed (an error status, a reset, a truncated body).
    case badGateway(String)
    /// 503: too many renders in flight and the waiting line is full; come back after `retryAfterSeconds`.
    case overloaded(retryAfterSeconds: Int)
    /// 504: the origin or the render did not finish within the request's deadline.
    case gatewayTimeout

    /// The HTTP status code.
    public var status: Int {
        switch self {
        case .badRequest: 400
        case .forbidden: 403
        case .sourceNotFound: 404
        case .tooLarge: 413
        case .uriTooLong: 414
        case .unsupportedOutputFormat: 415
        case .undecodableSource: 422
        case .badGateway: 502
        case .overloaded: 503
        case .gatewayTimeout: 504
        }
    }

    /// The one-line text body.
    public var description: String {
        switch self {
        case .badRequest(let why): "bad request: \(why)"
        case .forbidden(let why): "forbidden: \(why)"
        case .sourceNotFound: "source not found"
        case .tooLarge(let why): "too large: \(why)"
        case .uriTooLong(let limit): "request path longer than \(limit) bytes"
        case .unsupportedOutputFormat(let format): "cannot encode \(format) in this build"
        case .undecodableSource(let why): "source is not a decodable image: \(why)"
        case .badGateway(let why): "source failed: \(why)"
        case .overloaded(let seconds): "overloaded, retry after \(seconds) s"
        case .gatewayTimeout: "source or render took longer than the deadline"
        }
    }
}
