import Foundation
import HTTPTypes
import Hummingbird

/// Mounts an ``ImageService`` in a Hummingbird router: `GET`/`HEAD` `/healthz`, optionally `/metrics` and a demo
/// page at `/`, and every other path as a thumbor URL.
///
/// ```swift
/// let router = Router()
/// ImageServiceRoutes(service: service).register(on: router)
/// let app = Application(router: router, configuration: .init(address: .hostname("0.0.0.0", port: 8080)))
/// try await app.runService()
/// ```
///
/// The thumbnail route reads the raw request path (percent-encoded, `//` kept), as thumbor signs it. A
/// ``CachedAnswerHandler`` on the server's channels answers cached thumbnails before they reach these routes.
public struct ImageServiceRoutes: Sendable {
    public let service: ImageService
    /// The text `/metrics` answers (Prometheus' exposition format), or `nil` for no such route.
    public var metricsExposition: (@Sendable () -> String)?
    /// The HTML `/` answers, or `nil` for no such page.
    public var demoPage: String?

    public init(service: ImageService, metricsExposition: (@Sendable () -> String)? = nil, demoPage: String? = nil) {
        self.service = service
        self.metricsExposition = metricsExposition
        self.demoPage = demoPage
    }

    /// Adds the routes to `router`, at its root.
    public func register<Context: RequestContext>(on router: Router<Context>) {
        router.get("healthz") { _, _ in Self.text("ok\n") }
        router.head("healthz") { _, _ in Self.text("") }
        if let metricsExposition {
            router.get("metrics") { _, _ in
                Self.text(metricsExposition(), contentType: "text/plain; version=0.0.4; charset=utf-8")
            }
        }
        if let demoPage {
            router.get("/") { _, _ in Self.text(demoPage, contentType: "text/html; charset=utf-8") }
        }
        router.get("**") { request, context in await respond(to: request, context: context, includesBody: true) }
        router.head("**") { request, context in await respond(to: request, context: context, includesBody: false) }
    }

    private func respond<Context: RequestContext>(to request: Request, context: Context, includesBody: Bool) async -> Response {
        let answer = await service.respond(to: ImageServiceRequest(
            path: request.uri.path, accept: request.headers[.accept], ifNoneMatch: request.headers[.ifNoneMatch],
            requestID: context.id))
        let body = includesBody ? ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)) : ResponseBody()
        return Response(status: HTTPResponse.Status(code: answer.status), headers: answer.httpFields, body: body)
    }

    private static func text(_ text: String, contentType: String = "text/plain; charset=utf-8") -> Response {
        Response(status: .ok, headers: [.contentType: contentType], body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}

extension ImageServiceResponse {
    /// The answer's headers as HTTP fields, with its `Content-Length` (also for `HEAD`, which sends no body).
    var httpFields: HTTPFields {
        var fields = HTTPFields()
        for (name, value) in headers {
            if let name = Self.fieldName(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        fields[.contentLength] = String(body.count)
        return fields
    }

    /// The field name of `name`: the service's own names without parsing them again for every answer.
    private static func fieldName(_ name: String) -> HTTPField.Name? {
        switch name {
        case "ETag": .eTag
        case "Last-Modified": .lastModified
        case "Cache-Control": .cacheControl
        case "Content-Type": .contentType
        case "Vary": .vary
        case "Retry-After": .retryAfter
        default: HTTPField.Name(name)
        }
    }
}
