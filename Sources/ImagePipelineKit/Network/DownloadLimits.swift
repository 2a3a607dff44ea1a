import Foundation

/// Bounds of one download. Every limit fails the download with its own ``DownloadError``.
///
/// The defaults bound what a hostile or broken server can cost: no body larger than
/// ``defaultMaxResponseBytes``, no download longer than two minutes, and none slower than 1 KiB/s over 20
/// seconds, so a server that drip-feeds bytes cannot hold one of the few download slots forever.
public struct DownloadLimits: Sendable, Equatable {
    /// The most body bytes accepted, or `nil` for no limit. Checked against `Content-Length` when the head
    /// arrives (nothing of the body is read then) and again as bytes stream in
    /// (``DownloadError/responseTooLarge(limit:)``).
    public var maxResponseBytes: Int?
    /// The most redirects followed; one more fails with ``DownloadError/tooManyRedirects(_:)``. `0` refuses
    /// every redirect.
    public var maxRedirects: Int
    /// How long establishing the connection may take (``DownloadError/connectTimedOut``), waiting for a free
    /// pooled connection included. ``URLSessionDownloader`` cannot see the connection on Linux and bounds the
    /// wait for the response head instead.
    public var connectTimeout: Duration
    /// How long the transfer may go without receiving anything, before or after the head
    /// (``DownloadError/idleTimedOut``). Time spent inside the delegate's callbacks does not count.
    public var idleTimeout: Duration
    /// How long the whole download may take, from its start to its last byte, or `nil` for no deadline
    /// (``DownloadError/deadlineExceeded``). Unlike the idle timeout, a server that keeps sending cannot
    /// extend it.
    public var totalTimeout: Duration?
    /// The slowest body transfer accepted, or `nil` for any (``DownloadError/transferTooSlow``).
    public var minimumTransferRate: MinimumTransferRate?
    /// Whether `file` URLs are read from disk. Off by default: a URL from the network must not read local files.
    /// Redirects never lead to a `file` URL, whatever this says.
    public var allowsFileURLs: Bool

    /// The default ``maxResponseBytes``: 64 MiB. The largest image the default ``DecodingLimits`` admit
    /// (64 megapixels) is about 20 MB as a high-quality JPEG, so this leaves room for a few times that while
    /// keeping an endless body from taking the process's memory.
    public static let defaultMaxResponseBytes = 64 << 20

    /// Defaults: 64 MiB, 5 redirects, 10 s to connect, 30 s idle, 2 minutes in all, at least 1 KiB/s over
    /// 20 s, no file URLs.
    public init(maxResponseBytes: Int? = DownloadLimits.defaultMaxResponseBytes, maxRedirects: Int = 5,
                connectTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(30),
                totalTimeout: Duration? = .seconds(120),
                minimumTransferRate: MinimumTransferRate? = MinimumTransferRate(bytesPerSecond: 1024, window: .seconds(20)),
                allowsFileURLs: Bool = false) {
        self.maxResponseBytes = maxResponseBytes
        self.maxRedirects = maxRedirects
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.totalTimeout = totalTimeout
        self.minimumTransferRate = minimumTransferRate
        self.allowsFileURLs = allowsFileURLs
    }
}

/// The slowest a response body may arrive: at least ``bytesPerSecond`` on average over each ``window``,
/// counted from the response head. Time the delegate spends handling bytes does not count against the server.
public struct MinimumTransferRate: Sendable, Equatable {
    /// The average rate required over each window.
    public var bytesPerSecond: Int
    /// How long the rate is averaged over; a short stall within it is forgiven.
    public var window: Duration

    /// A rate of `bytesPerSecond` averaged over `window`.
    public init(bytesPerSecond: Int, window: Duration) {
        self.bytesPerSecond = bytesPerSecond
        self.window = window
    }

    /// The bytes one window must bring.
    var bytesPerWindow: Int {
        Int((Double(bytesPerSecond) * window.seconds).rounded(.up))
    }
}
