/// A scripted misbehaviour of one route (or of every route), set with
/// ``ImageOriginServer/setFaults(_:for:count:)`` while the server runs.
///
/// Body faults count *body* bytes of the response actually sent (after any `Range` was applied), never
/// head bytes. When a body is shorter than the fault's `N`, the whole body goes out and then the
/// fault's ending happens (close and reset still end the connection; a stall has nothing left to stall).
public enum OriginFault: Sendable, Hashable {
    /// Send the head and `N` body bytes, then close the connection cleanly (FIN): the client sees exactly
    /// `N` body bytes and then end of stream, short of the declared `Content-Length`.
    case closeAfterBytes(Int)
    /// Send the head and `N` body bytes, then abort the connection with a TCP RST (`SO_LINGER` 0, close).
    case resetAfterBytes(Int)
    /// Send the head and `N` body bytes, then nothing more: the connection stays open until the client goes
    /// away or the server shuts down.
    case stallAfterBytes(Int)
    /// Send the head and `N` body bytes, wait `duration`, then send the rest: a hiccup at a known place, so
    /// that a client reads the first `N` bytes apart from the rest however its reads happen to fall (on a
    /// link, it replaces that response's random stall).
    case pauseAfterBytes(Int, for: Duration)
    /// Declare `Content-Length: N` but send the real body, then close the connection (a longer declaration
    /// looks like a truncated body to the client, a shorter one leaves bytes the client must not use).
    case wrongContentLength(Int)
    /// Answer every request with `200` and the whole body, whatever `Range` and `If-Range` say.
    case ignoreRange
    /// Honour `Range` whatever `If-Range` says: a client resuming a file that has changed since gets a `206`
    /// of the new file (as broken caches and servers do).
    case ignoreIfRange
    /// Send the body chunked and never end it: the asset's bytes (or range) over and over, as fast as the
    /// client reads and shaping allows, until the client goes away or the server shuts down.
    case endlessBody
    /// Send neither `Last-Modified` nor `ETag`; an `If-Range` then never matches, so ranges get the full body.
    case noValidators
    /// Answer conditional requests as if they were plain ones: `If-None-Match` and `If-Modified-Since` never
    /// give a `304`, so a client revalidating gets `200` and the whole body every time (as servers without
    /// conditional support do).
    case ignoreValidators
    /// Omit `Accept-Ranges: bytes` (ranges are still honoured unless ``ignoreRange`` is also set).
    case noAcceptRanges
    /// Send the asset's body with `Transfer-Encoding: chunked` and no `Content-Length`, as many CDNs do, so
    /// the client cannot know the length in advance (an HTTP/1.0 client gets a body ended by closing).
    case chunkedTransfer
    /// Send the body with neither `Content-Length` nor chunked framing, ended by closing the connection (as
    /// HTTP/1.0 servers and some proxies do): the client cannot tell a cut connection from the body's end.
    case closeDelimitedBody
    /// Answer with this status and a small `text/plain` body instead of the asset (the route need not exist).
    case status(Int)
    /// Answer with a redirect: this status (301, 302, 303, 307 or 308) and `Location: to`.
    case redirect(to: String, status: Int = 302)
}

/// The faults that apply to one request, folded into what the response planner and the body writer need.
struct OriginFaultSet: Sendable, Hashable {
    /// Where the body stops early and how.
    enum Interruption: Sendable, Hashable {
        case close(afterBytes: Int)
        case reset(afterBytes: Int)
        case stall(afterBytes: Int)

        var afterBytes: Int {
            switch self {
            case .close(let bytes), .reset(let bytes), .stall(let bytes): max(0, bytes)
            }
        }
    }

    /// A pause in the body: after how many body bytes, and for how long.
    struct Pause: Sendable, Hashable {
        var afterBytes: Int
        var duration: Duration
    }

    var interruption: Interruption?
    var pause: Pause?
    var declaredLength: Int?
    var ignoresRange = false
    var ignoresIfRange = false
    var isEndless = false
    var omitsValidators = false
    var ignoresConditionals = false
    var omitsAcceptRanges = false
    var isChunked = false
    var isCloseDelimited = false
    var statusOverride: Int?
    var redirectLocation: String?
    var redirectStatus = 302

    /// Folds `faults` in order; when two faults set the same thing (two interruptions, two statuses), the
    /// first one wins.
    init(_ faults: [OriginFault] = []) {
        for fault in faults {
            switch fault {
            case .closeAfterBytes(let bytes): interruption = interruption ?? .close(afterBytes: bytes)
            case .resetAfterBytes(let bytes): interruption = interruption ?? .reset(afterBytes: bytes)
            case .stallAfterBytes(let bytes): interruption = interruption ?? .stall(afterBytes: bytes)
            case .pauseAfterBytes(let bytes, let duration):
                pause = pause ?? Pause(afterBytes: max(0, bytes), duration: max(duration, .zero))
            case .wrongContentLength(let length): declaredLength = declaredLength ?? max(0, length)
            case .ignoreRange: ignoresRange = true
            case .ignoreIfRange: ignoresIfRange = true
            case .endlessBody: (isEndless, isChunked) = (true, true)
            case .noValidators: omitsValidators = true
            case .ignoreValidators: ignoresConditionals = true
            case .noAcceptRanges: omitsAcceptRanges = true
            case .chunkedTransfer: isChunked = true
            case .closeDelimitedBody: (isChunked, isCloseDelimited) = (true, true)
            case .status(let code):
                if statusOverride == nil, redirectLocation == nil { statusOverride = code }
            case .redirect(let location, let code):
                if statusOverride == nil, redirectLocation == nil { (redirectLocation, redirectStatus) = (location, code) }
            }
        }
    }
}
