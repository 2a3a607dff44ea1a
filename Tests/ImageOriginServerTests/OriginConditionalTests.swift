import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ImageOriginServer
import Testing
import TestSupport

@Suite("Origin server: conditional GET (304) and Cache-Control")
struct OriginConditionalTests {
    static let asset = patternBytes(1000)

    @Test("If-None-Match with the current ETag (strong, weak, in a list, or *) gets 304 with the validators and Cache-Control, and no body",
          arguments: ["CURRENT", "W/CURRENT", "\"other\", CURRENT", "*"])
    func notModifiedByETag(header: String) async throws {
        try await withOrigin { server in
            server.setAsset(Self.asset, at: "/a.jpg", cacheControl: "max-age=60")
            let etag = try #require(server.etag(at: "/a.jpg"))
            let (data, response) = try await fetch(server.url(for: "/a.jpg"),
                                                   headers: ["If-None-Match": header.replacingOccurrences(of: "CURRENT", with: etag)])
            #expect(response.statusCode == 304 && data.isEmpty)
            #expect(response.value(forHTTPHeaderField: "ETag") == etag)
            #expect(response.value(forHTTPHeaderField: "Cache-Control") == "max-age=60")
            try await server.waitForCompletedRequests(count: 1, timeout: .seconds(5))
            #expect(server.requestLog.first?.status == 304 && server.requestLog.first?.bytesSent == 0)
        }
    }

    @Test("Another ETag gets 200 with the body; If-None-Match decides over If-Modified-Since")
    func modifiedByETag() async throws {
        try await withOrigin { server in
            server.setAsset(Self.asset, at: "/a.jpg", cacheControl: "no-cache")
            let (data, response) = try await fetch(server.url(for: "/a.jpg"), headers: [
                "If-None-Match": "\"stale\"", "If-Modified-Since": "Mon, 01 Jan 2024 00:00:00 GMT",
            ])
            #expect(response.statusCode == 200 && byteMismatch(data, Self.asset) == nil)
            #expect(response.value(forHTTPHeaderField: "Cache-Control") == "no-cache")
        }
    }

    /// The asset's Last-Modified is ``ImageOriginServer/defaultLastModified``, Mon, 01 Jan 2024 00:00:00 GMT.
    @Test("If-Modified-Since at or after Last-Modified gets 304; before it, 200",
          arguments: [("Mon, 01 Jan 2024 00:00:00 GMT", 304), ("Mon, 01 Jan 2024 01:00:00 GMT", 304),
                      ("Sun, 31 Dec 2023 23:59:59 GMT", 200)])
    func modifiedSince(since: String, status: Int) async throws {
        try await withOrigin { server in
            server.setAsset(Self.asset, at: "/a.jpg")
            let (_, response) = try await fetch(server.url(for: "/a.jpg"), headers: ["If-Modified-Since": since])
            #expect(response.statusCode == status)
        }
    }

    @Test("The ignoreValidators fault answers a matching conditional request with 200 and the whole body")
    func ignoresValidators() async throws {
        try await withOrigin { server in
            server.setAsset(Self.asset, at: "/a.jpg")
            server.setFaults([.ignoreValidators], for: "/a.jpg")
            let etag = try #require(server.etag(at: "/a.jpg"))
            let (data, response) = try await fetch(server.url(for: "/a.jpg"), headers: ["If-None-Match": etag])
            #expect(response.statusCode == 200 && byteMismatch(data, Self.asset) == nil)
        }
    }
}
