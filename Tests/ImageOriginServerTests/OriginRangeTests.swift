import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ImageOriginServer
import Testing
import TestSupport

@Suite("Origin server: Range, If-Range and 416")
struct OriginRangeTests {
    static let length = 1000
    static let asset = patternBytes(length)

    @Test("A single byte range gets 206 with exactly those bytes and Content-Range",
          arguments: [
            ("bytes=100-", 100..<1000), ("bytes=100-199", 100..<200), ("bytes=-10", 990..<1000),
            ("bytes=0-0", 0..<1), ("bytes=990-5000", 990..<1000), ("bytes=-5000", 0..<1000), ("bytes=999-", 999..<1000),
          ])
    func singleRange(header: String, expected: Range<Int>) async throws {
        try await withOrigin { server in
            server.setAsset(Self.asset, at: "/a.jpg")
            let (data, response) = try await fetch(server.url(for: "/a.jpg"), headers: ["Range": header])
            #expect(response.statusCode == 206)
            #expect(byteMismatch(data, Self.asset[expected]) == nil)
            #expect(response.value(forHTTPHeaderField: "Content-Range")
                    == "bytes \(expected.lowerBound)-\(expected.upperBound - 1)/\(Self.length)")
            #expect(response.value(forHTTPHeaderField: "Content-Length") == String(expected.count))
            try await server.waitForCompletedRequests(count: 1, timeout: .seconds(5))
            #expect(server.requestLog.first?.bytesSent == expected.count)
        }
    }

    @Test("A range starting at or beyond the end is 416 with Content-Range bytes */length",
          arguments: ["bytes=1000-", "bytes=5000-6000", "bytes=-0"])
    func unsatisfiable(header: String) async throws {
        try await withOrigin { server in
            server.setAsset(Self.asset, at: "/a.jpg")
            let (data, response) = try await fetch(server.url(for: "/a.jpg"), headers: ["Range": header])
            #expect(response.statusCode == 416)
            #expect(response.value(forHTTPHeaderField: "Content-Range") == "bytes */1000")
            #expect(data.isEmpty)
        }
    }

    @Test("Malformed, multi-range and non-byte ranges are ignored: 200 with the whole body",
          arguments: ["bytes=200-100", "bytes=a-b", "items=0-10", "bytes=0-1,5-6", "bytes="])
    func ignoredRanges(header: String) async throws {
        try await withOrigin { server in
            server.setAsset(Self.asset, at: "/a.jpg")
            let (data, response) = try await fetch(server.url(for: "/a.jpg"), headers: ["Range": header])
            #expect(response.statusCode == 200)
            #expect(byteMismatch(data, Self.asset) == nil)
        }
    }

    @Test("If-Range with the current ETag honours the range (206)")
    func ifRangeMatchingETag() async throws {
        try await withOrigin { server in
            server.setAsset(Self.asset, at: "/a.jpg")
            let etag = try #require(server.etag(at: "/a.jpg"))
            let (data, response) = try await fetch(server.url(for: "/a.jpg"), headers: ["Range": "bytes=500-", "If-Range": etag])
            #expect(response.statusCode == 206)
            #expect(byteMismatch(data, Self.asset[500...]) == nil)
        }
    }

    @Test("If-Range with a stale or weak ETag gets 200 and the full body",
          arguments: ["\"0123456789abcdef\"", "W/\"whatever\""])
    func ifRangeStaleETag(validator: String) async throws {
        try await withOrigin { server in
            server.setAsset(Self.asset, at: "/a.jpg")
            let (data, response) = try await fetch(server.url(for: "/a.jpg"), headers: ["Range": "bytes=500-", "If-Range": validator])
            #expect(response.statusCode == 200)
            #expect(byteMismatch(data, Self.asset) == nil)
        }
    }

    @Test("If-Range with the ETag of replaced content gets 200 and the new full body")
    func ifRangeAfterReplacement() async throws {
        try await withOrigin { server in
            server.setAsset(Self.asset, at: "/a.jpg")
            let oldTag = try #require(server.etag(at: "/a.jpg"))
            let replacement = patternBytes(1200, seed: 5)
            server.setAsset(replacement, at: "/a.jpg")
            let (data, response) = try await fetch(server.url(for: "/a.jpg"), headers: ["Range": "bytes=500-", "If-Range": oldTag])
            #expect(response.statusCode == 200)
            #expect(byteMismatch(data, replacement) == nil)
        }
    }

    @Test("If-Range with the Last-Modified date (any HTTP-date form) honours the range; an older or later date gets 200",
          arguments: [("Mon, 01 Jan 2024 00:00:00 GMT", 206), ("Sun, 31 Dec 2023 23:59:59 GMT", 200),
                      ("Mon, 01 Jan 2024 00:00:01 GMT", 200), ("not a date", 200),
                      // The obsolete forms a client may still send (RFC 9110 §5.6.7).
                      ("Monday, 01-Jan-24 00:00:00 GMT", 206), ("Mon Jan  1 00:00:00 2024", 206)])
    func ifRangeDate(validator: String, expectedStatus: Int) async throws {
        try await withOrigin { server in
            server.setAsset(Self.asset, at: "/a.jpg")
            let (data, response) = try await fetch(server.url(for: "/a.jpg"), headers: ["Range": "bytes=500-", "If-Range": validator])
            #expect(response.statusCode == expectedStatus)
            #expect(byteMismatch(data, (expectedStatus == 206 ? Self.asset[500...] : Self.asset)) == nil)
        }
    }

    @Test("A HEAD with a range describes the 206 without a body")
    func headRange() async throws {
        try await withOrigin { server in
            server.setAsset(Self.asset, at: "/a.jpg")
            let connection = try RawHTTPConnection(port: server.port)
            let response = try await offloaded { try connection.request("HEAD", "/a.jpg", headers: [("Range", "bytes=10-19")]) }
            #expect(response.status == 206)
            #expect(response.header("Content-Range") == "bytes 10-19/1000")
            #expect(response.header("Content-Length") == "10")
        }
    }
}
