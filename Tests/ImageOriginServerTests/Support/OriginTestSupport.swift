import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ImageOriginServer

/// Deterministic bytes of any length: a test can tell which offsets it received.
func patternBytes(_ count: Int, seed: UInt8 = 0) -> Data {
    var data = Data(count: count)
    data.withUnsafeMutableBytes { raw in
        // A raw loop: a 20 MB map through a closure takes seconds in a debug build.
        let bytes = raw.bindMemory(to: UInt8.self)
        var index = 0
        while index < count {
            bytes[index] = UInt8(truncatingIfNeeded: index &* 31 &+ index >> 8 &+ Int(seed))
            index += 1
        }
    }
    return data
}

/// A URLSession that neither caches nor keeps cookies, so every request reaches the origin.
func makeSession(timeout: Double = 10) -> URLSession {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.urlCache = nil
    configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
    configuration.timeoutIntervalForRequest = timeout
    return URLSession(configuration: configuration)
}

/// A GET (or other method) through URLSession with `headers`; returns the body and the HTTP response.
func fetch(_ url: URL, method: String = "GET", headers: [String: String] = [:],
           session: URLSession = makeSession()) async throws -> (Data, HTTPURLResponse) {
    var request = URLRequest(url: url)
    request.httpMethod = method
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    let (data, response) = try await session.data(for: request)
    guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
    return (data, http)
}

/// Starts a server, runs `body`, and always shuts the server down.
@discardableResult
func withOrigin<T>(directory: String? = nil, _ body: (ImageOriginServer) async throws -> T) async throws -> T {
    let server = if let directory {
        try await ImageOriginServer.start(port: 0, directory: directory)
    } else {
        try await ImageOriginServer.start(port: 0)
    }
    do {
        let result = try await body(server)
        try await server.shutdown()
        return result
    } catch {
        try? await server.shutdown()
        throw error
    }
}

/// A fresh directory under the temporary directory, removed by the caller.
func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("origin-tests-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// `nil` when `received` holds exactly `expected`, else a short account of the first difference.
///
/// Tests compare bodies through this rather than `#expect(a == b)`: on failure Swift Testing diffs two
/// collections element by element, which for a 20 MB body never finishes.
func byteMismatch(_ received: some Sequence<UInt8>, _ expected: some Sequence<UInt8>) -> String? {
    let received = Array(received)
    let expected = Array(expected)
    if received == expected { return nil }
    let common = min(received.count, expected.count)
    let offset = (0..<common).first { received[$0] != expected[$0] } ?? common
    return "received \(received.count) bytes, expected \(expected.count); first difference at offset \(offset)"
}
