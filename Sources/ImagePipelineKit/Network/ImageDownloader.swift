import Foundation

// TIP's pluggable download provider (an app can swap in its own networking), reduced to what a downloader must
// do: fetch one URL, stream its response in order, and finish exactly once. Hydration, authorization,
// coalescing, resume and the "unnecessary error" rule (a transport error after every byte of a known length
// arrived does not fail the image) belong to the coordinator above this protocol; it expresses them through
// the request's headers and by reading the response and the completion faithfully.

/// Loads image bytes over the network (or from disk, when a request allows file URLs).
///
/// Two implementations ship: ``URLSessionDownloader`` in this module and `HTTPClientDownloader` in the
/// `ImagePipelineHTTPClient` product. Both obey the same rules:
/// - Only `http` and `https` URLs are loaded, plus `file` URLs when ``DownloadLimits/allowsFileURLs`` is set
///   (streamed from disk as a `200` with `Content-Length`). Anything else fails with
///   ``DownloadError/unsupportedScheme(_:)``.
/// - Redirects are followed up to ``DownloadLimits/maxRedirects``, never from `https` to `http`, and never to
///   a non-HTTP scheme (``DownloadRedirectPolicy``).
/// - ``DownloadLimits/maxResponseBytes`` is enforced up front from `Content-Length` and again while streaming,
///   so a server that omits or lies about its length still cannot push more.
/// - Every status is delivered as a response, `404` and `500` included: the coordinator decides what a
///   status means. Errors are about the transfer, not about HTTP semantics.
/// - A transfer that breaks after all bytes arrived is reported as it happened: the response, every chunk,
///   then the transport error.
public protocol ImageDownloader: Sendable {
    /// Starts loading `request` and returns the running download.
    ///
    /// Never calls `delegate` before returning, and never synchronously on the caller's thread: every event,
    /// including an immediate failure such as ``DownloadError/unsupportedScheme(_:)``, arrives later (see
    /// ``ImageDownloadDelegate`` for the thread). The download keeps `delegate` (strongly) until its completion
    /// has been delivered, then lets go of it.
    func startDownload(_ request: DownloadRequest, delegate: any ImageDownloadDelegate) -> any ImageDownloadTask
}

/// Receives one download's events, serially and in order: at most one response head, then zero or more body
/// chunks, then exactly one completion. Nothing arrives after the completion.
///
/// Calls never overlap and never come from inside ``ImageDownloader/startDownload(_:delegate:)``. They come on the
/// download's private serial queue or, for `HTTPClientDownloader`-like transports, on the thread that read the
/// bytes (an event-loop thread) whenever no other call is running: so keep them short, and hand decoding, disk
/// work or anything that waits to a queue of your own. They apply back-pressure: a downloader
/// reads on only after the chunk callback returns (``URLSessionDownloader`` cannot hold
/// libcurl back; see there). The delegate may call ``ImageDownloadTask/cancel()`` from inside any callback.
public protocol ImageDownloadDelegate: AnyObject, Sendable {
    /// The final response head, after any redirects. Sent once, before any chunk, for every status code.
    func download(_ task: any ImageDownloadTask, didReceive response: DownloadResponse)

    /// The next piece of the response body, in order. Never empty.
    func download(_ task: any ImageDownloadTask, didReceive chunk: Data)

    /// The end of the download: `nil` when the body was received as the server framed it, otherwise why it
    /// stopped. Sent exactly once, also when the download is cancelled (with ``DownloadError/cancelled``).
    func download(_ task: any ImageDownloadTask, didCompleteWith error: DownloadError?)
}

/// A running download, as returned by ``ImageDownloader/startDownload(_:delegate:)``. Thread-safe.
public protocol ImageDownloadTask: AnyObject, Sendable {
    /// The request the download was started with (before redirects).
    var request: DownloadRequest { get }

    /// The download's priority, TIP's scale. May change at any time while it runs; how much a downloader can do
    /// with it depends on the transport (see each downloader).
    var priority: Operation.QueuePriority { get set }

    /// Stops the download. Unless the download had already completed, its delegate then receives exactly one
    /// completion, ``DownloadError/cancelled``, and no event after it; a download that completed first keeps
    /// the completion it had. Safe to call any number of times, from any thread, including from inside a
    /// delegate callback.
    func cancel()
}

// MARK: - Request

/// What to download. A value: the downloader copies it when the download starts.
public struct DownloadRequest: Sendable, Equatable {
    /// The resource. `http` and `https` always; `file` only with ``DownloadLimits/allowsFileURLs``.
    public var url: URL
    /// Header fields sent with the request, in order, as given (the coordinator adds `Range`, `If-Range`,
    /// `Authorization`). The downloader adds what its transport needs (`Host`, `User-Agent`, …). On a
    /// redirect to another origin, `Authorization` and `Cookie` are not forwarded.
    public var headers: DownloadHeaders
    /// TIP's priority. The running download's ``ImageDownloadTask/priority`` changes it later.
    public var priority: Operation.QueuePriority
    /// Bounds on size, redirects and time.
    public var limits: DownloadLimits

    /// A `GET` of `url` with `headers`.
    public init(url: URL, headers: DownloadHeaders = DownloadHeaders(), priority: Operation.QueuePriority = .normal,
                limits: DownloadLimits = DownloadLimits()) {
        self.url = url
        self.headers = headers
        self.priority = priority
        self.limits = limits
    }
}

// MARK: - Response

/// The final response head of a download, after redirects.
public struct DownloadResponse: Sendable, Equatable {
    /// The HTTP status; `200` for a file URL (`404` when the file does not exist).
    public var statusCode: Int
    /// The response's header fields; lookups ignore case.
    public var headers: DownloadHeaders
    /// The URL that answered: the request's URL, or the last redirect's target.
    public var url: URL
    /// The body's length from `Content-Length`, or `nil` when the server did not say (chunked, or closed-delimited).
    /// A server can lie; the bytes that arrive are the truth.
    public var expectedContentLength: Int?

    /// A response head.
    public init(statusCode: Int, headers: DownloadHeaders, url: URL, expectedContentLength: Int?) {
        self.statusCode = statusCode
        self.headers = headers
        self.url = url
        self.expectedContentLength = expectedContentLength
    }

    /// Whether the status is `2xx`.
    public var isSuccess: Bool { (200..<300).contains(statusCode) }
}

// MARK: - Errors

/// Why a download stopped before its body was complete.
public enum DownloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// ``ImageDownloadTask/cancel()`` was called.
    case cancelled
    /// The URL's scheme (lowercased) is not one the download may load: not `http`/`https`, or `file` without
    /// ``DownloadLimits/allowsFileURLs``, or any non-HTTP scheme as a redirect target.
    case unsupportedScheme(String)
    /// More redirects than ``DownloadLimits/maxRedirects`` (the associated value).
    case tooManyRedirects(Int)
    /// A redirect from `https` to `http`, refused.
    case insecureRedirect(from: URL, to: URL)
    /// A redirect whose `Location` is not a URL.
    case invalidRedirect(location: String)
    /// The body is, or was about to become, larger than ``DownloadLimits/maxResponseBytes`` (the associated value).
    case responseTooLarge(limit: Int)
    /// No connection within ``DownloadLimits/connectTimeout``.
    case connectTimedOut
    /// Nothing received for ``DownloadLimits/idleTimeout``.
    case idleTimedOut
    /// The download took longer than ``DownloadLimits/totalTimeout``.
    case deadlineExceeded
    /// The body arrived slower than ``DownloadLimits/minimumTransferRate``.
    case transferTooSlow
    /// The connection was refused: nothing listens there (``URLSessionDownloader`` also reports an unreachable
    /// host so). Reported at once, not retried until a timeout.
    case connectionRefused
    /// An `http`/`https` URL without a host; nothing was requested.
    case invalidURL(String)
    /// The transport failed: a reset connection, a body shorter than `Content-Length`, a TLS failure,
    /// an unreadable file. The description is the transport's own, for logs; do not parse it.
    case transport(description: String)

    /// A stable number for logs, metrics and the CLI's JSON.
    public var code: DownloadErrorCode {
        switch self {
        case .cancelled: .cancelled
        case .unsupportedScheme: .unsupportedScheme
        case .tooManyRedirects: .tooManyRedirects
        case .insecureRedirect: .insecureRedirect
        case .invalidRedirect: .invalidRedirect
        case .responseTooLarge: .responseTooLarge
        case .connectTimedOut: .connectTimedOut
        case .idleTimedOut: .idleTimedOut
        case .deadlineExceeded: .deadlineExceeded
        case .transferTooSlow: .transferTooSlow
        case .connectionRefused: .connectionRefused
        case .invalidURL: .invalidURL
        case .transport: .transport
        }
    }

    /// A one-line explanation for logs.
    public var description: String {
        switch self {
        case .cancelled: "download cancelled"
        case .unsupportedScheme(let scheme): "unsupported URL scheme \"\(scheme)\""
        case .tooManyRedirects(let limit): "more than \(limit) redirects"
        case .insecureRedirect(let from, let to): "refused redirect from \(from.absoluteString) to \(to.absoluteString)"
        case .invalidRedirect(let location): "redirect to an invalid location \"\(location)\""
        case .responseTooLarge(let limit): "response larger than \(limit) bytes"
        case .connectTimedOut: "connect timed out"
        case .idleTimedOut: "no data received within the idle timeout"
        case .deadlineExceeded: "download took longer than its deadline"
        case .transferTooSlow: "download slower than the minimum transfer rate"
        case .connectionRefused: "connection refused"
        case .invalidURL(let url): "invalid URL \"\(url)\""
        case .transport(let description): "transport error: \(description)"
        }
    }
}

/// Stable numbers of ``DownloadError`` cases. Never renumbered.
public enum DownloadErrorCode: Int, Sendable {
    /// ``DownloadError/cancelled``.
    case cancelled = -1
    /// ``DownloadError/unsupportedScheme(_:)``.
    case unsupportedScheme = 1
    /// ``DownloadError/tooManyRedirects(_:)``.
    case tooManyRedirects = 2
    /// ``DownloadError/insecureRedirect(from:to:)``.
    case insecureRedirect = 3
    /// ``DownloadError/invalidRedirect(location:)``.
    case invalidRedirect = 4
    /// ``DownloadError/responseTooLarge(limit:)``.
    case responseTooLarge = 5
    /// ``DownloadError/connectTimedOut``.
    case connectTimedOut = 6
    /// ``DownloadError/idleTimedOut``.
    case idleTimedOut = 7
    /// ``DownloadError/transport(description:)``.
    case transport = 8
    /// ``DownloadError/invalidURL(_:)``.
    case invalidURL = 9
    /// ``DownloadError/deadlineExceeded``.
    case deadlineExceeded = 10
    /// ``DownloadError/transferTooSlow``.
    case transferTooSlow = 11
    /// ``DownloadError/connectionRefused``.
    case connectionRefused = 12
}

// MARK: - Headers

/// Ordered HTTP header fields with case-insensitive lookup. Keeps repeated fields and the order they came in.
public struct DownloadHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One field.
    public typealias Element = (name: String, value: String)

    private var fields: [Field] = []

    private struct Field: Sendable, Equatable {
        var name: String
        var value: String
    }

    /// No fields.
    public init() {}

    /// The `User-Agent` both downloaders send unless given another or the request sets its own: the library's
    /// name and version (`ImagePipelineKit/0.2.0-dev`), so servers and their logs can tell image fetches apart, and
    /// CDNs that refuse requests naming no client serve them.
    public static let defaultUserAgent = "\(LibraryVersion.name)/\(LibraryVersion.version)"

    /// `fields`, in order.
    public init(_ fields: [(name: String, value: String)]) {
        self.fields = fields.map { Field(name: $0.name, value: $0.value) }
    }

    /// `elements`, in order.
    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// The first value of the field `name` (any case), or `nil`.
    public subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Every value of the field `name` (any case), in order.
    public func values(for name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// The first value of the field `name` (any case) as a non-negative decimal number, as `Content-Length` and
    /// `Age` carry one, with spaces or tabs around it allowed; `nil` when the field is absent or holds anything
    /// else (a sign, a fraction, a list, a number too large for `Int`).
    public func integerValue(for name: String) -> Int? {
        guard let value = self[name] else { return nil }
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        guard let first = value.utf8.firstIndex(where: { !isBlank($0) }),
              let last = value.utf8.lastIndex(where: { !isBlank($0) })
        else { return nil }
        let digits = value[first...last]
        guard digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(digits)
    }

    /// Whether the field `name` (any case) is present.
    public func contains(_ name: String) -> Bool {
        fields.contains { $0.name.caseInsensitiveEquals(name) }
    }

    /// Appends a field, keeping any already there with the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field `name` (any case) with one field, at the place of the first (or at the end).
    public mutating func replaceOrAdd(name: String, value: String) {
        if let first = fields.firstIndex(where: { $0.name.caseInsensitiveEquals(name) }) {
            fields[first] = Field(name: name, value: value)
            var index = fields.index(after: first)
            while index < fields.endIndex {
                if fields[index].name.caseInsensitiveEquals(name) { fields.remove(at: index) } else { index += 1 }
            }
        } else {
            add(name: name, value: value)
        }
    }

    /// Removes every field `name` (any case).
    public mutating func remove(name: String) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
    }

    /// How many fields there are.
    public var count: Int { fields.count }

    /// Whether there are no fields.
    public var isEmpty: Bool { fields.isEmpty }

    /// The fields in order.
    public func makeIterator() -> AnyIterator<Element> {
        var iterator = fields.makeIterator()
        return AnyIterator { iterator.next().map { (name: $0.name, value: $0.value) } }
    }

    /// `Name: value` lines.
    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }
}

extension String {
    /// Field names are ASCII tokens (RFC 9110): only ASCII letters fold, and no lowercased copies are made, since
    /// every lookup compares the name with each field's.
    fileprivate func caseInsensitiveEquals(_ other: String) -> Bool {
        utf8.elementsEqual(other.utf8) { byte, otherByte in
            let folded = byte | 0x20
            return byte == otherByte || (folded == otherByte | 0x20 && (0x61...0x7A).contains(folded))
        }
    }
}

extension Operation.QueuePriority {
    /// The priority on `URLSessionTask`'s 0...1 scale: `veryLow` 0, `low` 0.25, `normal` 0.5 (URLSession's
    /// default), `high` 0.75, `veryHigh` 1. (TIP computed `(p + 9) / 18` in integer arithmetic, always 0.)
    public var relativeValue: Float {
        Float(min(max(rawValue, Operation.QueuePriority.veryLow.rawValue), Operation.QueuePriority.veryHigh.rawValue) + 8) / 16
    }
}
