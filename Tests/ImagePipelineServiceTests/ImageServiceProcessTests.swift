import AsyncHTTPClient
import Foundation
import ImageOriginServer
import ImagePipelineKit
import NIOCore
import TestSupport
import Testing
@testable import ImagePipelineService

/// The `image-service` binary as a user runs it: a real process on a free port, spoken to over HTTP.
@Suite("image-service process", .enabled(if: ServiceProcess.binary != nil, "image-service is not built next to the tests"))
struct ImageServiceProcessTests {
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: Data
    }

    static func get(_ url: String, headers: [(String, String)] = []) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 16 << 20)
        var fields: [String: String] = [:]
        for field in response.headers { fields[field.name.lowercased()] = field.value }
        return Answer(status: Int(response.status.code), headers: fields, body: Data(buffer: body))
    }

    static func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("ipk-service-process-\(UUID().uuidString)").path
    }

    @Test("health, a signed render, metrics that count it, a 304; a second process on the same cache directory answers from disk")
    func servesAndShares() async throws {
        let origin = try await ImageOriginServer.start()
        origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/rocket.jpg")
        let cacheDirectory = Self.temporaryDirectory()
        let arguments = ["--security-key", "process-key", "--allowed-source", "127.0.0.1:\(origin.port)",
                         "--allow-private-sources", "--cache-dir", cacheDirectory]
        let service = try await ServiceProcess.start(arguments)
        #expect(try await Self.get(service.baseURL + "/healthz").status == 200)
        let signedPath = URLSigner(keys: ["process-key"]).signedPath(for: "256x256/127.0.0.1:\(origin.port)/rocket.jpg")
        let first = try await Self.get(service.baseURL + signedPath)
        #expect(first.status == 200 && first.headers["content-type"] == "image/jpeg")
        let image = try CodecCatalogue.shared.decode(first.body).container.bitmap
        #expect(image.size == PixelSize(width: 256, height: 256))
        let tag = try #require(first.headers["etag"])
        #expect(try await Self.get(service.baseURL + signedPath, headers: [("If-None-Match", tag)]).status == 304)
        #expect(try await Self.get(service.baseURL + "/unsafe/256x256/127.0.0.1:\(origin.port)/rocket.jpg").status == 403,
                "unsafe URLs are off unless switched on")
        let metrics = String(decoding: try await Self.get(service.baseURL + "/metrics").body, as: UTF8.self)
        #expect(metrics.contains("image_service_renders_total{format=\"jpeg\"} 1"), "\(metrics)")
        #expect(metrics.contains("image_service_requests_total{status=\"304\"} 1"))
        #expect(metrics.contains("image_service_request_duration_seconds"))
        #expect(await service.stop() == 0)
        // One line per thumbnail request, written out by the time the process exits: the render, the 304
        // answered from memory, the refused unsafe URL.
        let requestLines = { service.log.split(separator: "\n").filter { $0.contains("request-id=") } }
        #expect(try await eventually { requestLines().count == 3 }, "\(service.log)")
        let lines = requestLines()
        #expect(lines.first?.contains("cache=rendered") == true && lines.first?.contains("status=200") == true)
        #expect(lines.dropFirst().first?.contains("cache=memory") == true && lines.dropFirst().first?.contains("status=304") == true)
        #expect(lines.last?.contains("status=403") == true && lines.last?.contains("source-host=127.0.0.1") == true)

        let second = try await ServiceProcess.start(arguments)
        let again = try await Self.get(second.baseURL + signedPath)
        #expect(again.status == 200 && again.body == first.body && again.headers["etag"] == tag)
        #expect(origin.requests(to: "/rocket.jpg").count == 1, "the second process read the result from the shared disk cache")
        #expect(await second.stop() == 0)
        try await origin.shutdown()
        try? FileManager.default.removeItem(atPath: cacheDirectory)
    }

    @Test("SIGTERM in the middle of a load: every request in flight is answered, and the process exits 0")
    func gracefulShutdown() async throws {
        let origin = try await ImageOriginServer.start()
        let photo = try ServiceFixture.photo(ImageServiceTests.rocket)
        for index in 0..<12 {
            origin.setAsset(photo, at: "/photo-\(index).jpg")
            origin.setFaults([.pauseAfterBytes(2_000, for: .milliseconds(800))], for: "/photo-\(index).jpg")
        }
        let service = try await ServiceProcess.start([
            "--allow-unsafe-url", "--allowed-source", "127.0.0.1:\(origin.port)", "--allow-private-sources",
            "--cache-dir", Self.temporaryDirectory(), "--shutdown-grace", "20",
        ])
        let base = service.baseURL
        let load = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<12 {
                    group.addTask { try await Self.get(base + "/unsafe/128x128/127.0.0.1:\(origin.port)/photo-\(index).jpg").status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(try await eventually { origin.requestLog.count == 12 }, "every request reached the origin")
        let status = await service.stop(signal: SIGTERM)
        let statuses = try await load.value
        #expect(statuses == Array(repeating: 200, count: 12), "\(statuses)")
        #expect(status == 0)
        try await origin.shutdown()
    }

    @Test("a usage error exits 64 with the usage; neither a key nor unsafe URLs is a usage error")
    func usageErrors() async throws {
        guard let binary = ServiceProcess.binary else { return }
        let noKey = try await ChildProcess.run(binary, ["--port", "0"], timeout: 30)
        #expect(noKey.exitCode == 64)
        let badPort = try await ChildProcess.run(binary, ["--port", "70000", "--allow-unsafe-url"], timeout: 30)
        #expect(badPort.exitCode == 64)
        let help = try await ChildProcess.run(binary, ["--help"], timeout: 30)
        #expect(help.exitCode == 0)
        for flag in ["--security-key", "--allow-unsafe-url", "--allowed-source", "--allow-private-sources", "--cache-dir",
                     "--redis", "--max-source-bytes", "--deadline", "--max-renders", "--max-processing", "--max-waiting", "IMAGE_SERVICE_SECURITY_KEYS"] {
            #expect(help.stdout.contains(flag), "--help documents \(flag)")
        }
    }
}
