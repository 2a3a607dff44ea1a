import Foundation
import ImagePipelineKit
import NIOHTTP1

/// Everything about one response decided before its first byte: status, head, which body bytes, how fast,
/// and where the body stops early. Pure: the planner reads a request and a route snapshot, nothing else.
struct OriginResponsePlan: Sendable {
    /// What happens once the body has gone out (or has been cut short).
    enum Ending: Sendable, Equatable {
        /// Send the end of the response; close the connection after it when `thenClose`.
        case finish(thenClose: Bool)
        /// Close the connection cleanly (FIN) after the last body byte.
        case close
        /// Abort the connection (TCP RST) after the last body byte.
        case reset
        /// Send nothing more and leave the connection open.
        case stall
    }

    var version: HTTPVersion
    var status: HTTPResponseStatus
    var headers: HTTPHeaders
    /// The representation; the bytes sent are ``bodyRange`` of it.
    var body: Data
    /// Offsets into ``body`` to send before ``ending``; empty for `HEAD`.
    var bodyRange: Range<Int>
    var ending: Ending
    var shaping: OriginShaping
    /// Whether ``bodyRange`` repeats forever instead of ending.
    var isEndless = false
    /// Where the body pauses once, and for how long (``OriginFault/pauseAfterBytes(_:for:)``).
    var pause: OriginFaultSet.Pause?

    /// Where the body byte at `offset` (counted from ``bodyRange``'s start, repeats included) comes from in
    /// ``body``, and how many bytes from there belong to the same repeat.
    func source(at offset: Int) -> (start: Int, available: Int) {
        let length = bodyRange.count
        let position = isEndless && length > 0 ? (offset - bodyRange.lowerBound) % length : offset - bodyRange.lowerBound
        return (bodyRange.lowerBound + position, length - position)
    }

    /// Whether bytes remain to be sent once `offset` is reached.
    func hasBody(after offset: Int) -> Bool {
        (isEndless && !bodyRange.isEmpty) || offset < bodyRange.upperBound
    }

    /// The request facts the planner uses.
    struct Request {
        var method: HTTPMethod
        var version: HTTPVersion
        var headers: HTTPHeaders
        var keepAlive: Bool
    }

    /// A response with a small `text/plain` body (errors, status overrides, redirects).
    static func message(_ status: HTTPResponseStatus, _ text: String, for request: Request,
                        shaping: OriginShaping, extraHeaders: [(String, String)] = [],
                        interruption: OriginFaultSet.Interruption? = nil) -> OriginResponsePlan {
        var headers = HTTPHeaders()
        let body = Data(text.utf8)
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: String(body.count))
        for (name, value) in extraHeaders { headers.add(name: name, value: value) }
        return finished(status: status, headers: headers, body: body, range: 0..<body.count, request: request,
                        shaping: shaping, interruption: interruption, declaredLength: nil)
    }

    /// The response to `request` for `asset` (nil: not found) under `faults`.
    static func make(for request: Request, asset: OriginAsset?, faults: OriginFaultSet,
                     shaping: OriginShaping) -> OriginResponsePlan {
        guard request.method == .GET || request.method == .HEAD else {
            return message(.methodNotAllowed, "method not allowed\n", for: request, shaping: shaping,
                           extraHeaders: [("Allow", "GET, HEAD")])
        }
        if let location = faults.redirectLocation {
            return message(HTTPResponseStatus(statusCode: faults.redirectStatus), "redirect to \(location)\n",
                           for: request, shaping: shaping, extraHeaders: [("Location", location)],
                           interruption: faults.interruption)
        }
        if let code = faults.statusOverride {
            let status = HTTPResponseStatus(statusCode: code)
            return message(status, "status \(code)\n", for: request, shaping: shaping, interruption: faults.interruption)
        }
        guard let asset else {
            return message(.notFound, "not found\n", for: request, shaping: shaping)
        }

        let etag = faults.omitsValidators ? nil : asset.etag
        let lastModified = faults.omitsValidators ? nil : asset.lastModified
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: asset.contentType)
        if let lastModified { headers.add(name: "Last-Modified", value: HTTPDate.format(lastModified)) }
        if let etag { headers.add(name: "ETag", value: etag) }
        if let cacheControl = asset.cacheControl { headers.add(name: "Cache-Control", value: cacheControl) }
        if !faults.ignoresConditionals,
           OriginConditional.isNotModified(request.headers, etag: etag, lastModified: lastModified) {
            // Only the validators and caching fields: the client keeps the body it has.
            return finished(status: .notModified, headers: headers, body: Data(), range: 0..<0, request: request,
                            shaping: shaping, interruption: nil, declaredLength: nil)
        }
        if !faults.omitsAcceptRanges { headers.add(name: "Accept-Ranges", value: "bytes") }

        let length = asset.data.count
        var outcome = OriginByteRange.full
        if !faults.ignoresRange,
           faults.ignoresIfRange
            || OriginByteRange.ifRangeAllows(request.headers.first(name: "If-Range"), etag: etag, lastModified: lastModified) {
            outcome = OriginByteRange.evaluate(request.headers.first(name: "Range"), length: length)
        }
        switch outcome {
        case .full:
            if !faults.isChunked { headers.add(name: "Content-Length", value: String(faults.declaredLength ?? length)) }
            var plan = finished(status: .ok, headers: headers, body: asset.data, range: 0..<length, request: request,
                                shaping: shaping, interruption: faults.interruption, declaredLength: faults.declaredLength,
                                chunked: faults.isChunked, closeDelimited: faults.isCloseDelimited)
            plan.isEndless = faults.isEndless && faults.interruption == nil
            plan.pause = faults.pause
            return plan
        case .partial(let range):
            headers.add(name: "Content-Range", value: "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(length)")
            if !faults.isChunked { headers.add(name: "Content-Length", value: String(faults.declaredLength ?? range.count)) }
            var plan = finished(status: .partialContent, headers: headers, body: asset.data, range: range, request: request,
                                shaping: shaping, interruption: faults.interruption, declaredLength: faults.declaredLength,
                                chunked: faults.isChunked, closeDelimited: faults.isCloseDelimited)
            plan.isEndless = faults.isEndless && faults.interruption == nil
            plan.pause = faults.pause
            return plan
        case .unsatisfiable:
            headers.replaceOrAdd(name: "Content-Type", value: "text/plain; charset=utf-8")
            headers.add(name: "Content-Range", value: "bytes */\(length)")
            headers.add(name: "Content-Length", value: "0")
            return finished(status: .rangeNotSatisfiable, headers: headers, body: Data(), range: 0..<0,
                            request: request, shaping: shaping, interruption: nil, declaredLength: nil)
        }
    }

    /// Adds the connection headers, trims the body for `HEAD` and applies an interruption.
    private static func finished(status: HTTPResponseStatus, headers: HTTPHeaders, body: Data, range: Range<Int>,
                                 request: Request, shaping: OriginShaping,
                                 interruption: OriginFaultSet.Interruption?, declaredLength: Int?,
                                 chunked: Bool = false, closeDelimited: Bool = false) -> OriginResponsePlan {
        var headers = headers
        let isHTTP11 = (request.version.major, request.version.minor) >= (1, 1)
        headers.add(name: "Date", value: HTTPDate.format(Date()))
        if !request.keepAlive {
            headers.add(name: "Connection", value: "close")
        } else if request.version == .http1_0 {
            headers.add(name: "Connection", value: "keep-alive")
        }
        var range = range
        // A 1xx, 204 or 304 has no body whatever it declares, and HEAD only describes one.
        let statusHasBody = !(100..<200).contains(status.code) && status.code != 204 && status.code != 304
        let hasBody = request.method != .HEAD && statusHasBody
        if !hasBody { range = range.lowerBound..<range.lowerBound }
        // The server frames responses itself (NIO's automatic framing is off) so that a body can also go out
        // with no framing at all, ended by the close.
        if !statusHasBody {
            headers.remove(name: "Content-Length")
            headers.remove(name: "Transfer-Encoding")
        } else if !headers.contains(name: "Content-Length"), isHTTP11, !closeDelimited {
            headers.add(name: "Transfer-Encoding", value: "chunked")
        }
        // A wrong declared length, or a body without a length that HTTP/1.0 cannot chunk, ends with the connection.
        let closesAfter = (declaredLength != nil && !chunked) || (chunked && (!isHTTP11 || closeDelimited))
        var ending = OriginResponsePlan.Ending.finish(thenClose: !request.keepAlive || (closesAfter && hasBody))
        if let interruption, hasBody {
            let stop = min(range.count, interruption.afterBytes)
            switch interruption {
            case .close: ending = .close
            case .reset: ending = .reset
            // Stalling after the whole body has gone out would only be a slow finish.
            case .stall: if stop < range.count { ending = .stall }
            }
            range = range.lowerBound..<(range.lowerBound + stop)
        }
        return OriginResponsePlan(version: request.version, status: status, headers: headers, body: body,
                                  bodyRange: range, ending: ending, shaping: shaping)
    }
}
