import Foundation
import TestSupport
import Testing

/// The demo page in a real browser: headless Chromium loads `image-service --demo` and reports, from the page's
/// own script, how many of its thumbnails it decoded; the service's metrics must have counted that many renders.
/// A screenshot goes to `out/image-service-demo.png` for a person to look at.
@Suite("image-service demo page in Chromium",
       .enabled(if: ServiceProcess.binary != nil && Chromium.path != nil, "needs image-service and chromium"))
struct BrowserDemoTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func chromiumArguments(_ extra: [String]) -> [String] {
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-chromium-\(UUID().uuidString)").path
        return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--user-data-dir=\(profile)", "--virtual-time-budget=15000"] + extra
    }

    @Test("every <img> of the demo page decodes in Chromium, and each was a render of the service")
    func demoPage() async throws {
        let service = try await ServiceProcess.start(
            ["--demo", "--cache-dir", FileManager.default.temporaryDirectory.appendingPathComponent("ipk-demo-\(UUID().uuidString)").path],
            environment: ["IMAGE_SERVICE_DEMO_IMAGES": Self.packageRoot.appendingPathComponent("SampleCLI/Images").path])
        let chromium = try #require(Chromium.path)
        let dom = try await ChildProcess.run(chromium, Self.chromiumArguments(["--dump-dom", service.baseURL + "/"]), timeout: 120)
        let status = try #require(dom.stdout.firstMatch(of: /decoded (\d+) of (\d+) thumbnails/), "\(dom.stdout.suffix(500))")
        let (decoded, total) = (Int(status.1)!, Int(status.2)!)
        #expect(total >= 60, "the page shows about 60 thumbnails")
        #expect(decoded == total, "every thumbnail decoded in the browser")

        let metrics = try await ImageServiceProcessTests.get(service.baseURL + "/metrics")
        let text = String(decoding: metrics.body, as: UTF8.self)
        let renders = text.split(separator: "\n").filter { $0.hasPrefix("image_service_renders_total{") }
            .compactMap { Int($0.split(separator: " ").last ?? "") }.reduce(0, +)
        #expect(renders == total, "one render per distinct thumbnail: \(renders)")

        let out = Self.packageRoot.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let screenshot = out.appendingPathComponent("image-service-demo.png").path
        _ = try await ChildProcess.run(chromium, Self.chromiumArguments([
            "--screenshot=\(screenshot)", "--window-size=1400,1800", "--hide-scrollbars", service.baseURL + "/",
        ]), timeout: 120)
        #expect(FileManager.default.fileExists(atPath: screenshot))
        #expect(await service.stop() == 0)
    }
}

/// Debian's Chromium (`scripts/install-system-deps.sh` installs it), or another Chrome where it is.
enum Chromium {
    static let path: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
}
