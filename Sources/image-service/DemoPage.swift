import Foundation
import ImageOriginServer

/// The demo's origin: the loopback origin serving the sample photos in `SampleCLI/Images` (or
/// `IMAGE_SERVICE_DEMO_IMAGES`).
struct DemoOrigin {
    let server: ImageOriginServer
    let photos: [String]

    var hostAndPort: String { "127.0.0.1:\(server.port)" }

    static func start(environment: [String: String] = ProcessInfo.processInfo.environment) async throws -> DemoOrigin {
        let directory = environment["IMAGE_SERVICE_DEMO_IMAGES"] ?? "SampleCLI/Images"
        let photos = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { name in [".jpg", ".png", ".webp", ".gif"].contains { name.hasSuffix($0) } }
            .sorted()
        guard !photos.isEmpty else {
            throw RuntimeFailure("no photos in \(directory): run from the repository root or set IMAGE_SERVICE_DEMO_IMAGES")
        }
        return DemoOrigin(server: try await ImageOriginServer.start(directory: directory), photos: photos)
    }

    func shutdown() async throws { try await server.shutdown() }
}

/// A page of thumbnails of every demo photo, in several sizes, crops and formats: what a browser shows when it
/// loads thumbor-style URLs from the service.
enum DemoPage {
    /// The variants each photo is shown in: a path prefix and a caption.
    static let variants: [(path: String, caption: String)] = [
        ("160x160", "160×160 centre crop, format by Accept"),
        ("160x160/smart", "160×160 smart crop"),
        ("160x160/left/top", "160×160 top-left crop"),
        ("fit-in/160x160/filters:fill(eeeeee)", "fit in 160×160, filled"),
        ("fit-in/160x160/filters:format(png)", "fit in 160×160, PNG"),
        ("-160x160/filters:format(webp):quality(60)", "flipped, WebP q60"),
        ("240x0/filters:format(jpeg)", "240 wide, JPEG"),
        ("0x100/filters:format(webp)", "100 high, WebP"),
        ("120x120/filters:no_upscale():format(jpeg):quality(90)", "120×120, JPEG q90"),
    ]

    static func html(origin: DemoOrigin) -> String {
        var cells = ""
        for photo in origin.photos {
            for variant in variants {
                let source = "\(origin.hostAndPort)/\(photo)"
                cells += """
                <figure><img src="/unsafe/\(variant.path)/\(source)" alt="\(photo), \(variant.caption)">\
                <figcaption>\(photo)<br>\(variant.caption)</figcaption></figure>\n
                """
            }
        }
        return """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>image-service demo</title>
        <style>
        body { font: 13px system-ui, sans-serif; margin: 16px; background: #fafafa; }
        main { display: grid; grid-template-columns: repeat(auto-fill, minmax(250px, 1fr)); gap: 12px; }
        figure { margin: 0; padding: 8px; background: #fff; border: 1px solid #ddd; text-align: center; }
        img { max-width: 240px; background: repeating-conic-gradient(#ddd 0 25%, #fff 0 50%) 0 0 / 16px 16px; }
        figcaption { color: #555; margin-top: 4px; }
        </style></head>
        <body><h1>image-service</h1>
        <p>\(origin.photos.count * variants.count) thumbnails of \(origin.photos.count) photos from the loopback origin \
        at \(origin.hostAndPort), each rendered by the service from a thumbor URL (hover or open one to see it).</p>
        <p id="status">loading…</p>
        <main>
        \(cells)</main>
        <script>
        // Once every image has loaded or failed: how many the browser decoded (a test reads this line).
        window.addEventListener("load", () => {
          const images = [...document.images];
          const decoded = images.filter((image) => image.complete && image.naturalWidth > 0 && image.naturalHeight > 0);
          document.getElementById("status").textContent = `decoded ${decoded.length} of ${images.length} thumbnails`;
        });
        </script>
        </body></html>
        """
    }
}
