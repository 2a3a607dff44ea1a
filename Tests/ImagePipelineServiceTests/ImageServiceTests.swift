import Foundation
import ImageOriginServer
import ImagePipelineKit
import TestSupport
import Testing
@testable import ImagePipelineService

/// The service in the test process against a loopback origin: pixels, formats, validators, the result cache and
/// the render coalescing. Refusals and limits are in ``ImageServiceSafetyTests``.
@Suite("image service: rendering and caching")
struct ImageServiceTests {
    /// rocket.jpg is 640x427: a cover of 256x256 scales it to 384x256 and cuts columns.
    static let rocket = "skimage-rocket.jpg"

    /// The source decoded in full, scaled as the geometry says, and cut at `origin`.
    static func reference(_ photo: String, path: String, origin: (Int, Int)? = nil) throws -> Bitmap {
        let source = try CodecCatalogue.shared.decode(try ServiceFixture.photo(photo)).container.bitmap
        let geometry = ThumbnailGeometry(request: try ThumborPath.parse(Substring(path)).request, source: source.size)
        let scaled = try source.scaled(to: geometry.scaled)
        guard let box = geometry.cropBox else { return scaled }
        let (x, y) = origin ?? ((scaled.width - box.width) / 2, (scaled.height - box.height) / 2)
        return try scaled.cropped(x: x, y: y, size: box)
    }

    @Test("a 256x256 centre crop of a JPEG is a JPEG of that size showing that region")
    func centreCrop() async throws {
        let fixture = try await ServiceFixture.start()
        fixture.origin.setAsset(try ServiceFixture.photo(Self.rocket), at: "/rocket.jpg")
        let path = "/unsafe/256x256/\(fixture.source)/rocket.jpg"
        let response = await fixture.get(path)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.header("Content-Type") == "image/jpeg")
        #expect(Array(response.body.prefix(3)) == [0xFF, 0xD8, 0xFF])
        let image = try response.decoded()
        #expect(image.size == PixelSize(width: 256, height: 256))
        let centre = try Self.reference(Self.rocket, path: path)
        let left = try Self.reference(Self.rocket, path: path, origin: (0, 0))
        #expect(psnr(image, centre) > 28, "the centre region")
        #expect(psnr(image, left) < psnr(image, centre) - 3, "not another region")

        let leftPath = "/unsafe/256x256/left/middle/\(fixture.source)/rocket.jpg"
        let leftImage = try await fixture.get(leftPath).decoded()
        #expect(psnr(leftImage, left) > 28, "the left alignment keeps the left columns")

        let flipped = try await fixture.get("/unsafe/-256x256/\(fixture.source)/rocket.jpg").decoded()
        #expect(psnr(try centre.flipped(horizontally: true, vertically: false), flipped) > 28)
        await fixture.shutdown()
    }

    @Test("fit-in keeps the whole image; fill pads it; proportional sides; PNG and WebP by format()")
    func fitInAndFormats() async throws {
        let fixture = try await ServiceFixture.start()
        fixture.origin.setAsset(try ServiceFixture.photo(Self.rocket), at: "/rocket.jpg")
        let fitted = try await fixture.get("/unsafe/fit-in/256x256/\(fixture.source)/rocket.jpg").decoded()
        #expect(fitted.size == PixelSize(width: 256, height: 171))
        let padded = await fixture.get("/unsafe/fit-in/256x256/filters:fill(ff0000):format(png)/\(fixture.source)/rocket.jpg")
        #expect(padded.header("Content-Type") == "image/png")
        let paddedImage = try padded.decoded()
        #expect(paddedImage.size == PixelSize(width: 256, height: 256))
        #expect(paddedImage.pixel(x: 128, y: 2) == RGBA(r: 255, g: 0, b: 0, a: 255), "the fill colour above the image")
        #expect(paddedImage.pixel(x: 128, y: 128) != RGBA(r: 255, g: 0, b: 0, a: 255), "the image in the middle")
        let wide = await fixture.get("/unsafe/200x0/filters:format(webp)/\(fixture.source)/rocket.jpg")
        #expect(Array(wide.body.prefix(4)) == Array("RIFF".utf8))
        #expect(try wide.decoded().size == PixelSize(width: 200, height: 133))
        let avif = await fixture.get("/unsafe/200x0/filters:format(avif)/\(fixture.source)/rocket.jpg")
        if OutputFormat.avif.isEncodable {
            #expect(avif.header("Content-Type") == "image/avif")
            #expect(try avif.decoded().size == PixelSize(width: 200, height: 133))
            // Without quality(), AVIF takes libavif's default (60), not the JPEG and WebP default (80).
            let at80 = await fixture.get("/unsafe/200x0/filters:format(avif):quality(80)/\(fixture.source)/rocket.jpg")
            let at60 = await fixture.get("/unsafe/200x0/filters:format(avif):quality(60)/\(fixture.source)/rocket.jpg")
            #expect(avif.body == at60.body && at80.body.count > avif.body.count, "\(avif.body.count) vs \(at80.body.count) bytes at 80")
        } else {
            #expect(avif.status == 415, "no AVIF encoder on this machine: a clear refusal, not another format")
        }
        await fixture.shutdown()
    }

    @Test("without format(), Accept chooses AVIF (where it can be encoded), then WebP, else the source's format; Vary: Accept")
    func negotiation() async throws {
        let fixture = try await ServiceFixture.start()
        fixture.origin.setAsset(try ServiceFixture.photo(Self.rocket), at: "/rocket.jpg")
        fixture.origin.setAsset(try ServiceFixture.photo("skimage-chelsea.png"), at: "/chelsea.png")
        let modern = await fixture.get("/unsafe/100x100/\(fixture.source)/rocket.jpg", accept: "image/avif,image/webp,*/*")
        #expect(modern.header("Content-Type") == (OutputFormat.avif.isEncodable ? "image/avif" : "image/webp"))
        #expect(modern.header("Vary") == "Accept")
        let webp = await fixture.get("/unsafe/100x100/\(fixture.source)/rocket.jpg", accept: "image/webp,*/*")
        #expect(webp.header("Content-Type") == "image/webp" && webp.header("Vary") == "Accept")
        let jpeg = await fixture.get("/unsafe/100x100/\(fixture.source)/rocket.jpg", accept: "*/*")
        #expect(jpeg.header("Content-Type") == "image/jpeg" && jpeg.header("Vary") == "Accept")
        let png = await fixture.get("/unsafe/100x100/\(fixture.source)/chelsea.png")
        #expect(png.header("Content-Type") == "image/png")
        let explicit = await fixture.get("/unsafe/100x100/filters:format(jpeg)/\(fixture.source)/rocket.jpg", accept: "image/webp")
        #expect(explicit.header("Content-Type") == "image/jpeg" && explicit.header("Vary") == nil)
        #expect(fixture.origin.requests(to: "/rocket.jpg").count == 1, "one source fetch for every rendering of it")
        await fixture.shutdown()
    }

    @Test("validators: a strong ETag, Last-Modified, Cache-Control; If-None-Match gets a 304; repeats come from the result cache")
    func validatorsAndResultCache() async throws {
        let fixture = try await ServiceFixture.start { $0.cacheMaxAge = 600 }
        fixture.origin.setAsset(try ServiceFixture.photo(Self.rocket), at: "/rocket.jpg")
        let path = "/unsafe/120x90/filters:format(jpeg)/\(fixture.source)/rocket.jpg"
        let first = await fixture.get(path)
        let tag = try #require(first.header("ETag"))
        #expect(tag.hasPrefix("\"") && !tag.hasPrefix("W/"))
        #expect(first.header("Cache-Control") == "public, max-age=600")
        #expect(first.header("Last-Modified").flatMap(HTTPDate.parse) != nil)
        #expect(first.cacheTier == "rendered")
        let second = await fixture.get(path)
        #expect(second.cacheTier == "memory" && second.body == first.body && second.header("ETag") == tag)
        let notModified = await fixture.get(path, ifNoneMatch: "\"other\", \(tag)")
        #expect(notModified.status == 304 && notModified.body.isEmpty && notModified.header("ETag") == tag)
        let changed = await fixture.get(path, ifNoneMatch: "\"other\"")
        #expect(changed.status == 200)
        #expect(fixture.origin.requests(to: "/rocket.jpg").count == 1)
        await fixture.shutdown()
    }

    @Test("100 concurrent requests for one thumbnail: one source fetch, one render")
    func coalescing() async throws {
        let fixture = try await ServiceFixture.start()
        fixture.origin.setAsset(try ServiceFixture.photo("skimage-hubble_deep_field.jpg"), at: "/hubble.jpg")
        // The origin holds the body back a moment, so that every request arrives while the render is running.
        fixture.origin.setFaults([.pauseAfterBytes(1_000, for: .milliseconds(300))], for: "/hubble.jpg")
        let path = "/unsafe/256x256/filters:format(jpeg)/\(fixture.source)/hubble.jpg"
        let responses = await withTaskGroup(of: ImageServiceResponse.self) { group in
            for _ in 0..<100 { group.addTask { await fixture.get(path) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(responses.allSatisfy { $0.status == 200 })
        #expect(Set(responses.map(\.body)).count == 1, "every answer has the same bytes")
        #expect(responses.filter { $0.cacheTier == "rendered" }.count == 1, "\(responses.map { $0.cacheTier ?? "-" })")
        #expect(fixture.origin.requests(to: "/hubble.jpg").count == 1)
        await fixture.shutdown()
    }

    @Test("smart crops keep the busiest region; plain crops keep the centre")
    func smartCrop() async throws {
        let fixture = try await ServiceFixture.start()
        // A flat grey canvas, 600x200, with a detailed 200x200 patch of a photo on its right.
        let photo = try CodecCatalogue.shared.decode(try ServiceFixture.photo(Self.rocket)).container.bitmap
        let patch = try photo.cropped(x: 100, y: 200, size: PixelSize(width: 200, height: 200))
        let canvas = try Bitmap(width: 600, height: 200) { pixels, stride in
            for y in 0..<200 {
                let row = (pixels + y * stride).assumingMemoryBound(to: UInt8.self)
                for x in 0..<600 {
                    let pixel = x >= 400 ? patch.pixel(x: x - 400, y: y) : RGBA(r: 128, g: 128, b: 128, a: 255)
                    row[x * 4] = pixel.r; row[x * 4 + 1] = pixel.g; row[x * 4 + 2] = pixel.b; row[x * 4 + 3] = 255
                }
            }
        }
        fixture.origin.setAsset(try PNGEncoder().encode(ImageContainer(bitmap: canvas), options: [], quality: 1), at: "/canvas.png")
        let smart = try await fixture.get("/unsafe/200x200/smart/filters:format(png)/\(fixture.source)/canvas.png").decoded()
        // The window may take in the canvas's one edge column between grey and photo, the sharpest of all.
        let chosen = DetailCrop.origin(in: canvas, box: PixelSize(width: 200, height: 200))
        #expect((395...400).contains(chosen.x) && chosen.y == 0, "\(chosen)")
        #expect(psnr(smart, try canvas.cropped(x: chosen.x, y: 0, size: PixelSize(width: 200, height: 200))) > 40,
                "the service cut that window, losslessly")
        #expect(psnr(smart, patch) > psnr(try plainCentre(canvas), patch) + 3, "far nearer the patch than the centre is")
        let plain = try await fixture.get("/unsafe/200x200/filters:format(png)/\(fixture.source)/canvas.png").decoded()
        #expect(plain.pixel(x: 100, y: 100) == RGBA(r: 128, g: 128, b: 128, a: 255), "the centre is the flat part")
        await fixture.shutdown()
    }

    private func plainCentre(_ canvas: Bitmap) throws -> Bitmap {
        try canvas.cropped(x: 200, y: 0, size: PixelSize(width: 200, height: 200))
    }

    @Test("EXIF orientation is applied; an animated GIF gives its first frame as a still image")
    func orientationAndAnimation() async throws {
        let fixture = try await ServiceFixture.start()
        fixture.origin.setAsset(try ServiceFixture.photo("welcome2.gif"), at: "/welcome.gif")
        let gif = await fixture.get("/unsafe/0x0/filters:format(png)/\(fixture.source)/welcome.gif")
        #expect(gif.status == 200)
        #expect(try gif.decoded().size == PixelSize(width: 290, height: 48))
        // A JPEG stored sideways (EXIF orientation 6: rotate 90° clockwise to view) comes out upright.
        let upright = try CodecCatalogue.shared.decode(try ServiceFixture.photo(Self.rocket)).container.bitmap
        let sideways = try upright.applying(.left)
        let jpeg = try JPEGEncoder().encode(ImageContainer(bitmap: sideways), options: [], quality: 0.95)
        fixture.origin.setAsset(try EXIFFixture.withOrientation(6, jpeg), at: "/sideways.jpg")
        let rotated = try await fixture.get("/unsafe/0x0/filters:format(png)/\(fixture.source)/sideways.jpg").decoded()
        #expect(rotated.size == upright.size)
        #expect(psnr(rotated, upright) > 30)
        await fixture.shutdown()
    }
}
