import ArgumentParser
import Foundation
import ImageOriginServer
import ImagePipelineKit

/// The images a scroll serves, each under one URL per cell that shows it.
struct ScrollAssets: Sendable {
    struct Asset: Sendable {
        var name: String
        var data: Data
        var format: String
    }

    let assets: [Asset]

    /// The bundled images: baseline and progressive JPEG, PNG, WebP, animated GIF.
    static func bundled() throws -> ScrollAssets {
        let names = ["skimage-rocket.jpg", "skimage-astronaut-progressive.jpg", "skimage-camera.png",
                     "skimage-chelsea.webp", "fire.gif", "skimage-hubble_deep_field.jpg", "skimage-chelsea.png",
                     "welcome2.gif"]
        return ScrollAssets(assets: try names.map { name in
            Asset(name: name, data: try read(name), format: format(of: name))
        })
    }

    /// The bundled photos re-encoded by our JPEG encoder at quality 85, all progressive or all baseline: the
    /// same pictures either way, for `--compare`'s progressive-versus-baseline run.
    static func jpegs(progressive: Bool) throws -> ScrollAssets {
        let sources = ["skimage-rocket.jpg", "skimage-astronaut-progressive.jpg", "skimage-hubble_deep_field.jpg",
                       "skimage-camera.png", "skimage-chelsea.png"]
        return ScrollAssets(assets: try sources.map { name in
            let image = try CodecCatalogue.shared.decode(try read(name)).container
            let data = try CodecCatalogue.shared.encode(image, as: .jpeg, options: progressive ? [.progressive] : [], quality: 0.85)
            return Asset(name: (name as NSString).deletingPathExtension + ".jpg", data: data,
                         format: progressive ? "progressive-jpeg" : "jpeg")
        })
    }

    /// A social feed: photos of 1200-2048 px (progressive JPEG at quality 80, as feeds serve them), with the
    /// bundled PNG, WebP and GIF cells between them. The photos are made from the bundled pictures by our own
    /// scaler and encoder, with a fine deterministic grain (an enlarged picture is smoother than a camera's,
    /// and would compress to a fraction of a real photo's bytes), once, and kept in `directory`.
    /// With `photosOnly`, the photos alone, progressive or baseline (the same pictures and quality), for
    /// `--compare`'s progressive-versus-baseline run.
    static func feed(cachedIn directory: String, photosOnly: Bool = false, progressive: Bool = true) throws -> ScrollAssets {
        let photos: [(source: String, size: PixelSize)] = [
            ("skimage-hubble_deep_field.jpg", PixelSize(width: 2048, height: 1786)),
            ("skimage-rocket.jpg", PixelSize(width: 1200, height: 1800)),
            ("skimage-chelsea.png", PixelSize(width: 2048, height: 1362)),
            ("skimage-astronaut-progressive.jpg", PixelSize(width: 1600, height: 1600)),
            ("skimage-camera.png", PixelSize(width: 1440, height: 1440)),
            ("skimage-hubble_deep_field.jpg", PixelSize(width: 1536, height: 1340)),
        ]
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var assets: [Asset] = []
        for (index, photo) in photos.enumerated() {
            let stem = (photo.source as NSString).deletingPathExtension
            let name = "feed-\(Self.feedVersion)-\(index)-\(stem)-\(photo.size.width)x\(photo.size.height)"
                + (progressive ? ".jpg" : "-baseline.jpg")
            let path = (directory as NSString).appendingPathComponent(name)
            let data: Data
            if let kept = FileManager.default.contents(atPath: path) {
                data = kept
            } else {
                data = try makeFeedPhoto(from: try read(photo.source), size: photo.size, seed: UInt32(index + 1),
                                         progressive: progressive)
                try data.write(to: URL(fileURLWithPath: path), options: .atomic)
            }
            assets.append(Asset(name: name, data: data, format: progressive ? "progressive-jpeg" : "jpeg"))
            if photosOnly { continue }
            // Every other photo, one of the small cells a feed mixes in (stickers, screenshots, animations).
            let others = ["skimage-chelsea.webp", "fire.gif", "skimage-camera.png"]
            if index % 2 == 1 {
                let other = others[(index / 2) % others.count]
                assets.append(Asset(name: other, data: try read(other), format: format(of: other)))
            }
        }
        return ScrollAssets(assets: assets)
    }

    /// Bumped when the feed's photos change, so that kept ones are made again.
    private static let feedVersion = 2

    private static func makeFeedPhoto(from source: Data, size: PixelSize, seed: UInt32, progressive: Bool) throws -> Data {
        let picture = try CodecCatalogue.shared.decode(source).container.bitmap.scaled(to: size)
        var state = seed &* 2_654_435_761
        let grained = try picture.withUnsafeBytes { pixels in
            try Bitmap(width: size.width, height: size.height) { output, stride in
                for row in 0..<size.height {
                    let from = pixels.baseAddress!.advanced(by: row * picture.bytesPerRow).assumingMemoryBound(to: UInt8.self)
                    let to = output.advanced(by: row * stride).assumingMemoryBound(to: UInt8.self)
                    for column in 0..<size.width {
                        // xorshift: the same grain every time, so the photo and its bytes are reproducible.
                        state ^= state << 13; state ^= state >> 17; state ^= state << 5
                        let grain = Int(state % 11) - 5
                        for channel in 0..<3 {
                            to[column * 4 + channel] = UInt8(clamping: Int(from[column * 4 + channel]) + grain)
                        }
                        to[column * 4 + 3] = 255
                    }
                }
            }
        }
        return try CodecCatalogue.shared.encode(ImageContainer(bitmap: grained), as: .jpeg,
                                                options: progressive ? [.progressive] : [], quality: 0.8)
    }

    private static func read(_ name: String) throws -> Data {
        guard let path = FetchBench.bundledImagePath(name) else { throw CommandFailure("bundled image \(name) not found") }
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }

    func serve(on server: ImageOriginServer, items: Int) {
        // One validator per picture, not one hash of its bytes per cell: hashing for every cell made setting up
        // a long scroll slow.
        let tags = assets.enumerated().map { index, asset in "\"picture-\(index)-\(asset.data.count)\"" }
        for item in 0..<items {
            server.setAsset(assets[item % assets.count].data, at: path(item: item), contentType: "application/octet-stream",
                            etag: tags[item % assets.count])
        }
    }

    func path(item: Int) -> String { "/cells/\(item)/\(assets[item % assets.count].name)" }

    func formats(items: Int) -> [String] { (0..<items).map { assets[$0 % assets.count].format } }

    static func format(of name: String) -> String {
        if name.contains("progressive") { return "progressive-jpeg" }
        switch (name as NSString).pathExtension {
        case "jpg": return "jpeg"
        case "png": return "png"
        case "gif": return "gif"
        case "webp": return "webp"
        default: return "other"
        }
    }
}
