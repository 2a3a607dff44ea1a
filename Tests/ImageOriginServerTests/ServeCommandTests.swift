import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TestSupport

private let sampleCLIPath = SampleCLIBinary.path

@Suite("sample-cli serve")
struct ServeCommandTests {
    @Test("serve prints its URL, serves the directory with ranges and --latency, logs one JSON line per request, exits 0 on SIGINT",
          .enabled(if: sampleCLIPath != nil, "sample-cli is not built next to the tests"))
    func serveDirectory() async throws {
        let root = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let asset = patternBytes(4096)
        try asset.write(to: root.appendingPathComponent("a.jpg"))
        let logPath = root.appendingPathComponent("requests.jsonl").path

        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(sampleCLIPath))
        process.arguments = ["serve", root.path, "--port", "0", "--latency", "50", "--log", logPath]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        let reader = output.fileHandleForReading
        let firstLine = try await offloaded { () -> String in
            var bytes = Data()
            while !bytes.contains(0x0A) {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                bytes.append(chunk)
            }
            return String(decoding: bytes, as: UTF8.self).components(separatedBy: "\n")[0]
        }
        #expect(firstLine.hasPrefix("http://127.0.0.1:"))
        let base = try #require(URL(string: firstLine))

        let (data, response) = try await fetch(base.appendingPathComponent("a.jpg"), headers: ["Range": "bytes=96-"])
        #expect(response.statusCode == 206)
        #expect(byteMismatch(data, asset[96...]) == nil)
        let (_, escape) = try await offloaded {
            let connection = try RawHTTPConnection(port: base.port ?? 0)
            return (0, try connection.request("GET", "/%2e%2e/etc/passwd"))
        }
        #expect(escape.status == 400)

        process.interrupt()
        try await offloaded { process.waitUntilExit() }
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)

        let lines = try String(contentsOfFile: logPath, encoding: .utf8).split(separator: "\n")
        try #require(lines.count == 2)
        let first = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(first["path"] as? String == "/a.jpg")
        #expect(first["status"] as? Int == 206)
        #expect(first["bytesSent"] as? Int == 4000)
        #expect(first["range"] as? String == "bytes=96-")
        #expect((first["durationMs"] as? Double ?? 0) >= 50)  // --latency 50 held the head back
        #expect((first["headers"] as? [[String: String]])?.contains { $0["name"] == "Range" } == true)
        let second = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        #expect(second["status"] as? Int == 400)
    }
}
