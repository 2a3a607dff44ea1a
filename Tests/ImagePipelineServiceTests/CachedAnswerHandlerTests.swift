import Foundation
import HTTPTypes
import ImageOriginServer
import ImagePipelineKit
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import TestSupport
import Testing
@testable import ImagePipelineService

/// The handler that answers on the event loop, on a channel of its own: what it answers itself, what it passes on
/// to the routes, and in which order the answers leave.
@Suite("image service: answers on the event loop")
struct CachedAnswerHandlerTests {
    /// One answer as the handler wrote it.
    struct Written {
        var head: HTTPResponse
        var body = Data()
        var ended = false
    }

    static func request(_ path: String, method: HTTPRequest.Method = .get, _ fields: HTTPFields = [:]) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "http", authority: "localhost", path: path, headerFields: fields)
    }

    /// Sends a whole request (head and end) into the channel.
    static func send(_ request: HTTPRequest, to channel: EmbeddedChannel) throws {
        try channel.writeInbound(HTTPRequestPart.head(request))
        try channel.writeInbound(HTTPRequestPart.end(nil))
    }

    /// The answers written since the last read.
    static func written(_ channel: EmbeddedChannel) throws -> [Written] {
        var answers: [Written] = []
        while let part = try channel.readOutbound(as: HTTPResponsePart.self) {
            switch part {
            case .head(let head): answers.append(Written(head: head))
            case .body(let buffer): answers[answers.count - 1].body += Data(buffer.readableBytesView)
            case .end: answers[answers.count - 1].ended = true
            }
        }
        return answers
    }

    /// The request parts passed on to the routes since the last read.
    static func passedOn(_ channel: EmbeddedChannel) throws -> [HTTPRequestPart] {
        var parts: [HTTPRequestPart] = []
        while let part = try channel.readInbound(as: HTTPRequestPart.self) { parts.append(part) }
        return parts
    }

    @Test("a cached thumbnail is answered with the routes' headers and bytes; HEAD, 304, order behind a request passed on, Connection: close")
    func answersCachedThumbnails() async throws {
        let fixture = try await ServiceFixture.start()
        fixture.origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/rocket.jpg")
        fixture.origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/other.jpg")
        let path = "/unsafe/64x64/\(fixture.source)/rocket.jpg"
        let rendered = await fixture.get(path)
        try #require(rendered.status == 200)
        try Self.exerciseCachedAnswers(fixture, path: path, rendered: rendered)
        await fixture.shutdown()
    }

    /// Synchronous: an embedded channel is used on the thread that made it.
    static func exerciseCachedAnswers(_ fixture: ServiceFixture, path: String, rendered: ImageServiceResponse) throws {
        let channel = EmbeddedChannel(handler: CachedAnswerHandler(service: fixture.service, serverName: "image-service"))

        // The query string is not part of the thumbor path.
        try Self.send(Self.request(path + "?cache-buster=1"), to: channel)
        let answers = try Self.written(channel)
        try #require(answers.count == 1)
        Self.expectSameAnswer(answers[0], as: rendered)
        #expect(try Self.passedOn(channel).isEmpty, "nothing reached the routes")

        try Self.send(Self.request(path, method: .head), to: channel)
        let head = try Self.written(channel)
        #expect(head.count == 1 && head[0].body.isEmpty && head[0].ended)
        #expect(head.first?.head.headerFields[.contentLength] == String(rendered.body.count))

        let tag = try #require(rendered.header("ETag"))
        try Self.send(Self.request(path, [.ifNoneMatch: tag]), to: channel)
        #expect(try Self.written(channel).map(\.head.status.code) == [304])

        // A thumbnail not rendered yet goes to the routes; a cached one asked after it waits its turn.
        let uncached = Self.request("/unsafe/64x64/\(fixture.source)/other.jpg")
        try Self.send(uncached, to: channel)
        try Self.send(Self.request(path), to: channel)
        let parts = try Self.passedOn(channel)
        #expect(parts.count == 4, "both requests, heads and ends, were passed on: \(parts)")
        #expect(try Self.written(channel).isEmpty)
        // The routes answer both; then the handler answers again.
        for _ in 0..<2 {
            try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
            try channel.writeOutbound(HTTPResponsePart.end(nil))
        }
        #expect(try Self.written(channel).count == 2)
        try Self.send(Self.request(path), to: channel)
        #expect(try Self.written(channel).count == 1 && Self.passedOn(channel).isEmpty)

        try Self.send(Self.request(path, [.connection: "close"]), to: channel)
        #expect(try Self.written(channel).count == 1)
        #expect(!channel.isActive, "the connection is closed after an answer to Connection: close")

        // Refusals are the routes' to answer.
        let other = EmbeddedChannel(handler: CachedAnswerHandler(service: fixture.service))
        try Self.send(Self.request("/unsafe/64x64/example.com/forbidden.jpg"), to: other)
        try Self.send(Self.request("/healthz"), to: other)
        try Self.send(Self.request(path, method: .post), to: other)
        #expect(try Self.passedOn(other).count == 6 && Self.written(other).isEmpty)
        _ = try? other.finish()
        _ = try? channel.finish()
    }

    static func expectSameAnswer(_ written: Written, as rendered: ImageServiceResponse) {
        let fields = written.head.headerFields
        #expect(written.head.status.code == 200 && written.ended)
        #expect(written.body == rendered.body)
        for name in ["ETag", "Last-Modified", "Cache-Control", "Content-Type", "Vary"] {
            #expect(fields[HTTPField.Name(name)!] == rendered.header(name), "\(name)")
        }
        #expect(fields[.contentLength] == String(rendered.body.count))
        #expect(fields[.server] == "image-service")
        #expect(fields[.date].flatMap(HTTPDate.parse) != nil, "a Date header: \(fields[.date] ?? "none")")
    }

    @Test("when no render can start or wait, a new thumbnail is refused with 503 on the event loop, before any download")
    func shedsOnTheEventLoop() async throws {
        let fixture = try await ServiceFixture.start {
            $0.limits.maxRendersInFlight = 1
            $0.limits.maxRendersWaiting = 0
            $0.limits.retryAfterSeconds = 3
        }
        let photo = try ServiceFixture.photo(ImageServiceTests.rocket)
        for name in ["slow", "new"] { fixture.origin.setAsset(photo, at: "/\(name).jpg") }
        fixture.origin.setFaults([.pauseAfterBytes(1_000, for: .seconds(2))], for: "/slow.jpg")
        let slowPath = "/unsafe/64x64/\(fixture.source)/slow.jpg"
        let running = Task { await fixture.get(slowPath) }
        #expect(try await eventually { fixture.service.admissionCounts.running == 1 })

        try Self.exerciseShedding(fixture, slowPath: slowPath)
        #expect(fixture.origin.requests(to: "/new.jpg").isEmpty)
        #expect(await running.value.status == 200)
        await fixture.shutdown()
    }

    static func exerciseShedding(_ fixture: ServiceFixture, slowPath: String) throws {
        let channel = EmbeddedChannel(handler: CachedAnswerHandler(service: fixture.service))
        try Self.send(Self.request("/unsafe/64x64/\(fixture.source)/new.jpg"), to: channel)
        let shed = try Self.written(channel)
        #expect(shed.map(\.head.status.code) == [503])
        #expect(shed.first?.head.headerFields[.retryAfter] == "3")
        // A request for the thumbnail being rendered joins that render: the routes take it.
        try Self.send(Self.request(slowPath), to: channel)
        #expect(try Self.passedOn(channel).count == 2)
        _ = try? channel.finish()
    }
}
