import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ImageOriginServer
import NIOCore
import Testing
import TestSupport

@Suite("Origin server: serving assets and files")
struct OriginServingTests {
    @Test("A GET of an in-memory asset returns its bytes with length, type, Last-Modified, a strong ETag and Accept-Ranges")
    func fullGet() async throws {
        try await withOrigin { server in
            let asset = patternBytes(10_000)
            server.setAsset(asset, at: "/a.jpg", contentType: "image/jpeg")
            let (data, response) = try await fetch(server.url(for: "/a.jpg"))
            #expect(response.statusCode == 200)
            #expect(byteMismatch(data, asset) == nil)
            #expect(response.value(forHTTPHeaderField: "Content-Length") == "10000")
            #expect(response.value(forHTTPHeaderField: "Content-Type") == "image/jpeg")
            #expect(response.value(forHTTPHeaderField: "Last-Modified") == "Mon, 01 Jan 2024 00:00:00 GMT")
            #expect(response.value(forHTTPHeaderField: "Accept-Ranges") == "bytes")
            let etag = try #require(response.value(forHTTPHeaderField: "ETag"))
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\"") && !etag.hasPrefix("W/"))
            #expect(etag.dropFirst().dropLast().allSatisfy { $0.isHexDigit || $0 == "-" })
            #expect(etag == server.etag(at: "/a.jpg"))
        }
    }

    @Test("The ETag is derived from the content: same bytes same tag, other bytes another; a given tag is quoted")
    func etagFollowsContent() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(5000), at: "/a.jpg")
            server.setAsset(patternBytes(5000), at: "/b.jpg")
            server.setAsset(patternBytes(5000, seed: 1), at: "/c.jpg")
            server.setAsset(patternBytes(10), at: "/d.jpg", lastModified: nil, etag: "v1")
            #expect(server.etag(at: "/a.jpg") == server.etag(at: "/b.jpg"))
            #expect(server.etag(at: "/a.jpg") != server.etag(at: "/c.jpg"))
            let (_, response) = try await fetch(server.url(for: "/d.jpg"))
            #expect(response.value(forHTTPHeaderField: "ETag") == "\"v1\"")
            #expect(response.value(forHTTPHeaderField: "Last-Modified") == nil)
        }
    }

    @Test("Content-Type comes from the extension when not given")
    func contentTypeFromExtension() async throws {
        try await withOrigin { server in
            for (path, type) in [("/x.png", "image/png"), ("/x.GIF", "image/gif"), ("/x.webp", "image/webp"),
                                 ("/x.jpeg", "image/jpeg"), ("/x", "application/octet-stream")] {
                server.setAsset(Data([1, 2, 3]), at: path)
                let (_, response) = try await fetch(server.url(for: path))
                #expect(response.value(forHTTPHeaderField: "Content-Type") == type, "\(path)")
            }
        }
    }

    @Test("HEAD answers with GET's headers and no body: the next response on the connection parses cleanly")
    func head() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(4000), at: "/a.jpg", contentType: "image/jpeg")
            let connection = try RawHTTPConnection(port: server.port)
            let (head, get) = try await offloaded {
                let head = try connection.request("HEAD", "/a.jpg")
                let get = try connection.request("GET", "/a.jpg")
                return (head, get)
            }
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == "4000")
            #expect(head.header("Content-Type") == "image/jpeg")
            #expect(head.header("ETag") == get.header("ETag"))
            #expect(get.status == 200)
            #expect(byteMismatch(get.body, Array(patternBytes(4000))) == nil)
            try await server.waitForCompletedRequests(count: 2, timeout: .seconds(5))
            #expect(server.requestLog.map(\.bytesSent) == [0, 4000])
        }
    }

    @Test("An unknown path is 404; methods other than GET and HEAD are 405 with Allow")
    func notFoundAndMethodNotAllowed() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(10), at: "/a.jpg")
            let (_, missing) = try await fetch(server.url(for: "/missing.jpg"))
            #expect(missing.statusCode == 404)
            for method in ["POST", "PUT", "DELETE"] {
                let (_, response) = try await fetch(server.url(for: "/a.jpg"), method: method)
                #expect(response.statusCode == 405, "\(method)")
                #expect(response.value(forHTTPHeaderField: "Allow") == "GET, HEAD")
            }
        }
    }

    @Test("removeAsset stops serving it; setAsset replaces it from the next request on")
    func replaceAndRemove() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(100), at: "/a.jpg")
            server.setAsset(patternBytes(200, seed: 7), at: "/a.jpg")
            let (data, _) = try await fetch(server.url(for: "/a.jpg"))
            #expect(byteMismatch(data, patternBytes(200, seed: 7)) == nil)
            server.removeAsset(at: "/a.jpg")
            let (_, response) = try await fetch(server.url(for: "/a.jpg"))
            #expect(response.statusCode == 404)
        }
    }

    @Test("An asset set for path?query is served for that query only; the path alone for any other")
    func queryRoutes() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(10, seed: 1), at: "/a.jpg")
            server.setAsset(patternBytes(10, seed: 2), at: "/a.jpg?v=2")
            let (plain, _) = try await fetch(server.url(for: "/a.jpg?v=1"))
            let (versioned, _) = try await fetch(server.url(for: "/a.jpg?v=2"))
            #expect(byteMismatch(plain, patternBytes(10, seed: 1)) == nil)
            #expect(byteMismatch(versioned, patternBytes(10, seed: 2)) == nil)
        }
    }

    @Test("A directory's files are served from disk with their type and modification date; a change is seen")
    func directoryServing() async throws {
        let root = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root.appendingPathComponent("sub dir"), withIntermediateDirectories: true)
        let file = root.appendingPathComponent("sub dir/p.png")
        try patternBytes(3000).write(to: file)
        let modified = Date(timeIntervalSince1970: 1_600_000_000)
        try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: file.path)

        try await withOrigin(directory: root.path) { server in
            let (data, response) = try await fetch(server.url(for: "/sub%20dir/p.png"))
            #expect(response.statusCode == 200)
            #expect(byteMismatch(data, patternBytes(3000)) == nil)
            #expect(response.value(forHTTPHeaderField: "Content-Type") == "image/png")
            #expect(response.value(forHTTPHeaderField: "Last-Modified") == "Sun, 13 Sep 2020 12:26:40 GMT")
            let firstTag = response.value(forHTTPHeaderField: "ETag")
            #expect(firstTag != nil)

            try patternBytes(3000, seed: 9).write(to: file)
            let (changed, changedResponse) = try await fetch(server.url(for: "/sub%20dir/p.png"))
            #expect(byteMismatch(changed, patternBytes(3000, seed: 9)) == nil)
            #expect(changedResponse.value(forHTTPHeaderField: "ETag") != firstTag)

            let (_, directoryItself) = try await fetch(server.url(for: "/sub%20dir/"))
            #expect(directoryItself.statusCode == 404)
            let (_, missing) = try await fetch(server.url(for: "/nope.png"))
            #expect(missing.statusCode == 404)
        }
    }

    @Test("Range requests work on directory files too")
    func directoryRange() async throws {
        let root = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        try patternBytes(3000).write(to: root.appendingPathComponent("a.jpg"))
        try await withOrigin(directory: root.path) { server in
            let (data, response) = try await fetch(server.url(for: "/a.jpg"), headers: ["Range": "bytes=1000-"])
            #expect(response.statusCode == 206)
            #expect(byteMismatch(data, patternBytes(3000)[1000...]) == nil)
            #expect(response.value(forHTTPHeaderField: "Content-Range") == "bytes 1000-2999/3000")
        }
    }

    @Test("Path traversal out of the directory is refused: .., encoded %2e%2e and %2f, backslash, NUL, absolute form, a symlink out",
          arguments: ["/../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt", "/served/../../secret.txt",
                      "/..%2fsecret.txt", "/%2e%2e%2fsecret.txt", "/..%5csecret.txt", "/%00secret.txt",
                      "/%zz", "secret.txt", "http://127.0.0.1/../secret.txt", "//../secret.txt", "/link.txt"])
    func traversalRejected(target: String) async throws {
        let parent = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: parent) }
        let served = parent.appendingPathComponent("served")
        try FileManager.default.createDirectory(at: served, withIntermediateDirectories: true)
        try Data("TOP SECRET".utf8).write(to: parent.appendingPathComponent("secret.txt"))
        try Data("public".utf8).write(to: served.appendingPathComponent("ok.txt"))
        try FileManager.default.createSymbolicLink(
            atPath: served.appendingPathComponent("link.txt").path, withDestinationPath: parent.appendingPathComponent("secret.txt").path)

        try await withOrigin(directory: served.path) { server in
            let connection = try RawHTTPConnection(port: server.port)
            let (response, control) = try await offloaded {
                let response = try connection.request("GET", target)
                let control = try? RawHTTPConnection(port: server.port).request("GET", "/ok.txt")
                return (response, control)
            }
            #expect(response.status == 400 || response.status == 404, "\(target) → \(response.status)")
            #expect(!String(decoding: response.body, as: UTF8.self).contains("SECRET"))
            #expect(control?.status == 200)
            #expect(byteMismatch(control?.body ?? [], Array("public".utf8)) == nil)
        }
    }

    @Test("Starting on a missing directory throws notADirectory")
    func missingDirectory() async throws {
        await #expect(throws: OriginServerError.notADirectory("/nonexistent/origin-dir")) {
            _ = try await ImageOriginServer.start(port: 0, directory: "/nonexistent/origin-dir")
        }
    }

    @Test("Keep-alive: two requests over one connection are both answered and logged on the same connection")
    func keepAlive() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(50_000), at: "/a.jpg")
            server.setAsset(patternBytes(7000, seed: 3), at: "/b.jpg")
            let connection = try RawHTTPConnection(port: server.port)
            let (first, second) = try await offloaded {
                (try connection.request("GET", "/a.jpg"), try connection.request("GET", "/b.jpg"))
            }
            #expect(first.status == 200)
            #expect(byteMismatch(first.body, patternBytes(50_000)) == nil)
            #expect(second.status == 200)
            #expect(byteMismatch(second.body, patternBytes(7000, seed: 3)) == nil)
            #expect(first.ending == .complete && second.ending == .complete)
            try await server.waitForCompletedRequests(count: 2, timeout: .seconds(5))
            let log = server.requestLog
            #expect(log.count == 2)
            #expect(log[0].connection == log[1].connection)
        }
    }

    @Test("Pipelined requests sent at once are answered in order, each body whole")
    func pipelining() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(30_000, seed: 1), at: "/1")
            server.setAsset(patternBytes(300_000, seed: 2), at: "/2")
            server.setAsset(patternBytes(5_000, seed: 3), at: "/3")
            let connection = try RawHTTPConnection(port: server.port)
            let responses = try await offloaded {
                try connection.send("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n"
                                    + "HEAD /3 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\n\r\n")
                return [try connection.readResponse(), try connection.readResponse(),
                        try connection.readResponse(bodyExpected: false), try connection.readResponse()]
            }
            #expect(responses.map(\.ending) == [.complete, .complete, .complete, .complete])
            #expect(byteMismatch(responses[0].body, patternBytes(30_000, seed: 1)) == nil)
            #expect(byteMismatch(responses[1].body, patternBytes(300_000, seed: 2)) == nil)
            #expect(responses[2].contentLength == 5_000)
            #expect(byteMismatch(responses[3].body, patternBytes(5_000, seed: 3)) == nil)
            try await server.waitForCompletedRequests(count: 4, timeout: .seconds(5))
            #expect(Set(server.requestLog.map(\.connection)).count == 1)
        }
    }

    @Test("Connection: close is honoured: the server closes after the response")
    func connectionClose() async throws {
        try await withOrigin { server in
            server.setAsset(patternBytes(1000), at: "/a.jpg")
            let connection = try RawHTTPConnection(port: server.port)
            let (response, rest) = try await offloaded {
                let response = try connection.request("GET", "/a.jpg", headers: [("Connection", "close")])
                return (response, connection.readToEnd())
            }
            #expect(response.header("Connection")?.lowercased() == "close")
            #expect(response.body.count == 1000)
            #expect(rest.bytes.isEmpty && rest.ending == .eof)
        }
    }

    @Test("50 parallel requests all get their own correct bytes and are all logged")
    func parallelLoad() async throws {
        try await withOrigin { server in
            for index in 0..<10 {
                server.setAsset(patternBytes(20_000 + index * 1000, seed: UInt8(index)), at: "/img\(index).jpg")
            }
            let session = makeSession(timeout: 30)
            let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
                for request in 0..<50 {
                    group.addTask {
                        let index = request % 10
                        let (data, response) = try await fetch(server.url(for: "/img\(index).jpg?r=\(request)"), session: session)
                        let ok = response.statusCode == 200 && data == patternBytes(20_000 + index * 1000, seed: UInt8(index))
                        return ok ? 0 : 1
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(mismatches == 0)
            try await server.waitForCompletedRequests(count: 50, timeout: .seconds(20))
            let log = server.requestLog
            #expect(log.count == 50)
            #expect(Set(log.map(\.sequence)).count == 50)
            #expect(log.allSatisfy { $0.status == 200 && !$0.clientWentAway })
        }
    }

    @Test("baseURL and url(for:) point at 127.0.0.1 and the bound port")
    func urls() async throws {
        try await withOrigin { server in
            #expect(server.port > 0)
            #expect(server.baseURL.absoluteString == "http://127.0.0.1:\(server.port)")
            #expect(server.url(for: "/a.jpg").absoluteString == "http://127.0.0.1:\(server.port)/a.jpg")
            #expect(server.url(for: "b.jpg?x=1").absoluteString == "http://127.0.0.1:\(server.port)/b.jpg?x=1")
            #expect(server.url(for: "/a b.jpg").absoluteString == "http://127.0.0.1:\(server.port)/a%20b.jpg")
        }
    }

    @Test("A chosen port is used, and shutdown frees it for a new server")
    func chosenPort() async throws {
        // Between the shutdown and the second start, any socket of the machine (another test's server or
        // outgoing connection) may be given the freed port: that is a new port's turn, up to five. A shutdown
        // that did not free its port fails every turn.
        var second: ImageOriginServer?
        var port = 0
        for _ in 0..<5 where second == nil {
            let first = try await ImageOriginServer.start(port: 0)
            port = first.port
            try await first.shutdown()
            try await first.shutdown()  // twice is harmless
            do {
                second = try await ImageOriginServer.start(port: port)
            } catch let error as IOError where error.errnoCode == EADDRINUSE {
                continue
            }
        }
        let server = try #require(second, "port \(port) stayed in use after its server shut down, five times")
        #expect(server.port == port)
        server.setAsset(Data([1]), at: "/x")
        let (data, _) = try await fetch(server.url(for: "/x"))
        #expect(byteMismatch(data, Data([1])) == nil)
        try await server.shutdown()
    }
}
