import Foundation
import HTTPTypes
import Hummingbird
import ImagePipelineKit
import NIOCore
import NIOHTTPTypes

/// Answers, on the connection's event loop, the requests that need no wait (a thumbnail the result cache holds
/// in memory, or a `503` when the service is too busy to render), and passes every other request on to the
/// Hummingbird routes.
///
/// A cached thumbnail is a lookup, but through the routes it also costs two thread hops (the event loop hands the
/// request to a task, the task hands the response back) and the task's own machinery, several times the lookup;
/// and an overloaded service's refusal would wait for a thread among the busy ones. Here the answer leaves from
/// the thread that read the request. It is the same answer, with the same headers, counted in the same metrics
/// and logged on the same line, that ``ImageServiceRoutes`` would give (``ImageService/answerWithoutWaiting(_:)``).
///
/// Add one per connection, for routes registered at the router's root:
///
/// ```swift
/// let app = Application(
///     router: router,
///     server: .http1(configuration: .init(additionalChannelHandlers: [CachedAnswerHandler(service: service)])))
/// ```
///
/// Answers keep the order of their requests: while a request passed on has not been answered, the ones after it
/// are passed on too. A request is passed on as well while the connection cannot take more bytes (the routes
/// then wait for the client, a handler on the event loop could not).
public final class CachedAnswerHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPRequestPart
    public typealias InboundOut = HTTPRequestPart
    public typealias OutboundIn = HTTPResponsePart
    public typealias OutboundOut = HTTPResponsePart

    private let service: ImageService
    private let serverName: String?
    /// Requests passed on whose response has not ended.
    private var requestsPassedOn = 0
    /// The body and end of a request answered here are dropped.
    private var isDroppingRequest = false
    private var hasUnflushedAnswer = false
    /// The `Date` header, made once a second.
    private var date: (second: Int, text: String) = (0, "")

    /// A handler answering from `service`'s result cache; `serverName`, when given, is sent as `Server`, as the
    /// application's own `serverName` is.
    public init(service: ImageService, serverName: String? = nil) {
        self.service = service
        self.serverName = serverName
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            if requestsPassedOn == 0, context.channel.isWritable, let answer = answer(head) {
                isDroppingRequest = true
                return write(answer, for: head, context: context)
            }
            isDroppingRequest = false
            requestsPassedOn += 1
            context.fireChannelRead(data)
        case .body:
            if !isDroppingRequest { context.fireChannelRead(data) }
        case .end:
            if isDroppingRequest { isDroppingRequest = false } else { context.fireChannelRead(data) }
        }
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        if hasUnflushedAnswer {
            hasUnflushedAnswer = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), requestsPassedOn > 0 { requestsPassedOn -= 1 }
        context.write(data, promise: promise)
    }

    private func answer(_ head: HTTPRequest) -> ImageServiceResponse? {
        guard head.method == .get || head.method == .head, let target = head.path else { return nil }
        // The routes see the path without its query, still percent-encoded, as thumbor signs it.
        let path = target.utf8.firstIndex(of: UInt8(ascii: "?")).map { String(target[..<$0]) } ?? target
        return service.answerWithoutWaiting(ImageServiceRequest(
            path: path, accept: head.headerFields[.accept], ifNoneMatch: head.headerFields[.ifNoneMatch],
            requestID: RequestID().description))
    }

    private func write(_ answer: ImageServiceResponse, for request: HTTPRequest, context: ChannelHandlerContext) {
        var fields = answer.httpFields
        fields[.date] = currentDate()
        if let serverName { fields[.server] = serverName }
        context.write(wrapOutboundOut(.head(HTTPResponse(status: .init(code: answer.status), headerFields: fields))),
                      promise: nil)
        if request.method != .head, !answer.body.isEmpty {
            context.write(wrapOutboundOut(.body(ByteBuffer(bytes: answer.body))), promise: nil)
        }
        if request.headerFields[.connection]?.lowercased() == "close" {
            // Closed once the answer is out, as the routes do for `Connection: close`.
            context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        } else {
            context.write(wrapOutboundOut(.end(nil)), promise: nil)
            hasUnflushedAnswer = true
        }
    }

    private func currentDate() -> String {
        let now = Date()
        let second = Int(now.timeIntervalSince1970)
        if second != date.second { date = (second, HTTPDate.format(now)) }
        return date.text
    }
}

@available(*, unavailable)
extension CachedAnswerHandler: Sendable {}
