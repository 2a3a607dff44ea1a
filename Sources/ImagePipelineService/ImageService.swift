import Foundation
import ImagePipelineKit
import Logging
import Tracing

/// Thumbnails over HTTP in thumbor's URL syntax: parses and checks a request, answers from the result cache, or
/// renders once (however many identical requests wait) within the bounds of ``ServiceLimits``.
///
/// Independent of the HTTP server: ``respond(to:)`` takes the parts of a request it needs and returns status,
/// headers and body. ``ImageServiceRoutes`` mounts it in a Hummingbird router.
public final class ImageService: Sendable {
    public let configuration: ImageServiceConfiguration
    /// The pipeline sources are fetched through.
    public let sourcePipeline: ImagePipeline
    let metrics: ServiceMetrics
    private let signer: URLSigner?
    private let renderer: ThumbnailRenderer
    private let results: ResultCache
    private let admission: RenderAdmission
    private let coalescing = RenderCoalescing<ResultCache.Entry>()
    private let checkedPaths = CheckedPaths()
    /// The `Cache-Control` of images, made once.
    private let cacheControl: String
    private let logger: Logger

    /// A service fetching sources through `sourcePipeline` and keeping rendered answers in `resultStore`'s memory
    /// and disk caches (``ImageServicePipelines`` makes both).
    public init(configuration: ImageServiceConfiguration, sourcePipeline: ImagePipeline, resultStore: ImagePipeline,
                logger: Logger = Logger(label: "image-service")) {
        self.configuration = configuration
        self.sourcePipeline = sourcePipeline
        signer = configuration.securityKeys.isEmpty ? nil : URLSigner(keys: configuration.securityKeys)
        renderer = ThumbnailRenderer(pipeline: sourcePipeline, limits: configuration.limits,
                                     defaultQuality: configuration.defaultQuality,
                                     defaultAVIFQuality: configuration.defaultAVIFQuality)
        results = ResultCache(store: resultStore, timeToLive: configuration.resultTimeToLive)
        admission = RenderAdmission(maxRunning: configuration.limits.maxRendersInFlight,
                                    maxWaiting: configuration.limits.maxRendersWaiting,
                                    retryAfterSeconds: configuration.limits.retryAfterSeconds)
        metrics = ServiceMetrics()
        cacheControl = "public, max-age=\(configuration.cacheMaxAge)"
        self.logger = logger
    }

    /// Answers one request. Never throws: every failure is a ``ServiceError`` status with a text body.
    public func respond(to request: ImageServiceRequest) async -> ImageServiceResponse {
        let started = ContinuousClock.now
        metrics.requestStarted()
        let response = await withSpan("image-service.request", ofKind: .server) { span in
            let response = await answer(request)
            Self.describe(span, request, response)
            return response
        }
        finish(request, response, started: started)
        return response
    }

    /// The answer to `request` when it needs no wait: its path is valid and the result cache holds its thumbnail
    /// in memory, or the thumbnail would have to be rendered and the service is too busy to start or queue a
    /// render (a `503`). Otherwise `nil`: a refusal of the request itself, a disk hit or a render is left to
    /// ``respond(to:)``. It neither waits nor reads a file, so an event loop may ask (``CachedAnswerHandler``);
    /// an answer is counted, logged and traced as ``respond(to:)`` would.
    public func answerWithoutWaiting(_ request: ImageServiceRequest) -> ImageServiceResponse? {
        let started = ContinuousClock.now
        guard let checked = try? check(request.path) else { return nil }
        let choice = formatChoice(for: checked.thumbnail, accept: request.accept)
        if case .explicit(let format) = choice, !format.isEncodable { return nil }
        let key = checked.resultKey(choice)
        var response: ImageServiceResponse
        if let entry = results.memoryEntry(for: key) {
            metrics.resultCacheHit(tier: .memory)
            response = self.response(entry, request: request, negotiated: choice.isNegotiated,
                                     tier: ResultCache.Tier.memory.rawValue)
        } else if admission.isFull, !coalescing.isRendering(key), !results.isOnDisk(key) {
            response = .failure(.overloaded(retryAfterSeconds: configuration.limits.retryAfterSeconds))
        } else {
            return nil
        }
        response.sourceHost = checked.sourceHost
        metrics.requestStarted()
        // The span of an answer that was ready at once; not even begun when no tracer was bootstrapped.
        if !(InstrumentationSystem.tracer is NoOpTracer) {
            withSpan("image-service.request", ofKind: .server) { span in Self.describe(span, request, response) }
        }
        finish(request, response, started: started)
        return response
    }

    /// The request span's attributes, made only when a tracer records them.
    private static func describe(_ span: any Span, _ request: ImageServiceRequest, _ response: ImageServiceResponse) {
        guard span.isRecording else { return }
        span.attributes["http.target"] = String(request.path.prefix(256))
        span.attributes["http.status_code"] = response.status
    }

    /// The metrics and the log line of an answered request.
    private func finish(_ request: ImageServiceRequest, _ response: ImageServiceResponse, started: ContinuousClock.Instant) {
        let duration = ContinuousClock.now - started
        metrics.requestFinished(status: response.status, duration: duration, shed: response.status == 503)
        var metadata: Logger.Metadata = [
            "request-id": .string(request.requestID), "status": .stringConvertible(response.status),
            "duration-ms": .stringConvertible((duration / .milliseconds(1)).rounded()),
            "cache": .string(response.cacheTier ?? "none"),
        ]
        if let host = response.sourceHost { metadata["source-host"] = .string(host) }
        logger.info("request", metadata: metadata)
    }

    private func answer(_ request: ImageServiceRequest) async -> ImageServiceResponse {
        let checked: CheckedPath
        do {
            checked = try check(request.path)
        } catch {
            var refusal = ImageServiceResponse.failure(error)
            // A refused source is still named in the log line (a path over the length limit is not read again).
            if case .uriTooLong = error {} else {
                refusal.sourceHost = (try? ThumborPath.parse(Substring(request.path))).flatMap { URL(string: $0.request.source)?.host }
            }
            return refusal
        }
        var reply = await answer(checked, request: request)
        reply.sourceHost = checked.sourceHost
        return reply
    }

    /// The path parsed, its signature verified and its source matched against the allow-list (remembered for
    /// paths asked for again).
    private func check(_ path: String) throws(ServiceError) -> CheckedPath {
        guard path.utf8.count <= configuration.limits.maxPathBytes else {
            throw .uriTooLong(configuration.limits.maxPathBytes)
        }
        return try checkedPaths.checked(path) { [self] path throws(ServiceError) in
            let parsed = try ThumborPath.parse(Substring(path))
            try authorize(parsed)
            let thumbnail = parsed.request
            return CheckedPath(thumbnail: thumbnail, source: try configuration.sourcePolicy.allowedURL(thumbnail.source))
        }
    }

    private func formatChoice(for thumbnail: ThumbnailRequest, accept: String?) -> ThumbnailRenderer.FormatChoice {
        thumbnail.filters.format.map { .explicit($0) } ?? .negotiated(accept: accept)
    }

    /// The answer for a checked request: from the result cache when it has it (synchronously, no slot, no
    /// deadline needed), else from the render for its key, within the deadline.
    private func answer(_ checked: CheckedPath, request: ImageServiceRequest) async -> ImageServiceResponse {
        let (thumbnail, url) = (checked.thumbnail, checked.source)
        let choice = formatChoice(for: thumbnail, accept: request.accept)
        if case .explicit(let format) = choice, !format.isEncodable { return .failure(.unsupportedOutputFormat(format.rawValue)) }
        let key = checked.resultKey(choice)
        if let (entry, tier) = results.entry(for: key) {
            metrics.resultCacheHit(tier: tier)
            return response(entry, request: request, negotiated: choice.isNegotiated, tier: tier.rawValue)
        }
        // Shed at once when no render could start or wait: no task, no deadline timer, no hop.
        if admission.isFull && !coalescing.isRendering(key) {
            return .failure(.overloaded(retryAfterSeconds: configuration.limits.retryAfterSeconds))
        }
        let outcome = await withDeadline(configuration.limits.requestDeadline) { [self] () async throws(ServiceError) -> ImageServiceResponse in
            let (result, isShared) = await coalescing.value(for: key) { [self] in
                await render(thumbnail, url: url, choice: choice, key: key)
            }
            return response(try result.get(), request: request, negotiated: choice.isNegotiated,
                            tier: isShared ? "coalesced" : "rendered")
        }
        switch outcome {
        case .success(let answer): return answer
        case .failure(let error): return .failure(error)
        }
    }

    /// Renders running and waiting for a slot now.
    var admissionCounts: (running: Int, waiting: Int) { admission.counts }

    private func authorize(_ parsed: ThumborPath.Parsed) throws(ServiceError) {
        switch parsed.signature {
        case .unsafe:
            guard configuration.allowsUnsafeURLs else { throw .forbidden("unsafe URLs are not allowed") }
        case .hmac(let signature):
            guard let signer else { throw .forbidden("this service has no security key to check signatures with") }
            guard signer.isValid(signature: signature, for: parsed.signedPart) else { throw .forbidden("bad signature") }
        }
    }

    /// One render (the coalesced requests' leader): the source's addresses, a slot, the source, the pixels, the
    /// encoder, the result cache.
    private func render(_ thumbnail: ThumbnailRequest, url: URL, choice: ThumbnailRenderer.FormatChoice,
                        key: String) async -> Result<ResultCache.Entry, ServiceError> {
        do throws(ServiceError) {
            try await configuration.sourcePolicy.checkAddresses(of: url)
            let rendered = try await admission.run { () async throws(ServiceError) -> ThumbnailRenderer.Rendered in
                let result = await withSpan("image-service.render") { _ in
                    do throws(ServiceError) {
                        return Result<ThumbnailRenderer.Rendered, ServiceError>.success(
                            try await renderer.render(thumbnail, source: url, format: choice))
                    } catch {
                        return .failure(error)
                    }
                }
                return try result.get()
            }
            metrics.rendered(rendered)
            return .success(results.store(rendered.data, format: rendered.format, dimensions: rendered.dimensions,
                                          source: url, key: key))
        } catch {
            return .failure(error)
        }
    }

    private func response(_ entry: ResultCache.Entry, request: ImageServiceRequest, negotiated: Bool,
                          tier: String) -> ImageServiceResponse {
        var headers: [(String, String)] = [
            ("ETag", entry.entityTag), ("Last-Modified", entry.lastModified),
            ("Cache-Control", cacheControl),
        ]
        if negotiated { headers.append(("Vary", "Accept")) }
        if let ifNoneMatch = request.ifNoneMatch, Self.matches(ifNoneMatch, entry.entityTag) {
            return ImageServiceResponse(status: 304, headers: headers, body: Data(), cacheTier: tier)
        }
        headers.append(("Content-Type", entry.format.mediaType))
        return ImageServiceResponse(status: 200, headers: headers, body: entry.data, cacheTier: tier)
    }

    /// `If-None-Match`: `*` or a list of tags (weak ones compare by their opaque part, as RFC 9110 says for it).
    private static func matches(_ header: String, _ entityTag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == entityTag || tag == "W/" + entityTag
        }
    }
}

/// The parts of an HTTP request the service reads.
public struct ImageServiceRequest: Sendable {
    /// The path as received (percent-encoded), without the query string and without the prefix the routes are
    /// mounted at.
    public var path: String
    public var accept: String?
    public var ifNoneMatch: String?
    /// An identifier for the log line.
    public var requestID: String

    public init(path: String, accept: String? = nil, ifNoneMatch: String? = nil, requestID: String = "-") {
        self.path = path
        self.accept = accept
        self.ifNoneMatch = ifNoneMatch
        self.requestID = requestID
    }
}

/// What the service answers.
public struct ImageServiceResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: Data
    /// Where the answer came from: `memory` or `disk` (the result cache), `rendered`, `coalesced` (another
    /// request's render), or `nil` for a refusal.
    public var cacheTier: String?
    /// The source's host, for the log line.
    public var sourceHost: String?

    init(status: Int, headers: [(String, String)], body: Data, cacheTier: String? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.cacheTier = cacheTier
    }

    static func failure(_ error: ServiceError) -> ImageServiceResponse {
        var headers = [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", "no-store")]
        if case .overloaded(let seconds) = error { headers.append(("Retry-After", String(seconds))) }
        return ImageServiceResponse(status: error.status, headers: headers, body: Data((error.description + "\n").utf8))
    }
}
