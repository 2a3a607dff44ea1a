import Foundation
import ImagePipelineKit
import Testing
@testable import ImagePipelineService

@Suite("thumbor URLs: parsing, signatures, geometry")
struct ThumborPathTests {
    @Test("every optional part, in thumbor's order")
    func fullPath() throws {
        let parsed = try ThumborPath.parse(
            "/unsafe/10x20:300x400/fit-in/-300x-200/left/bottom/smart/filters:format(webp):quality(70):no_upscale():fill(ff0000):strip_exif():max_bytes(9000)/example.com/a%20b.jpg")
        let request = parsed.request
        #expect(parsed.signature == .unsafe)
        #expect(request.sourceCrop == .init(left: 10, top: 20, right: 300, bottom: 400))
        #expect(request.fitsIn)
        #expect(request.width == .pixels(300) && request.height == .pixels(200))
        #expect(request.flipsHorizontally && request.flipsVertically)
        #expect(request.horizontalAlignment == .left && request.verticalAlignment == .bottom)
        #expect(request.isSmart)
        #expect(request.filters.format == .webp && request.filters.quality == 70 && request.filters.preventsUpscaling)
        #expect(request.filters.fill == RGBA(r: 255, g: 0, b: 0, a: 255) && request.filters.maxBytes == 9000)
        #expect(request.source == "http://example.com/a b.jpg")
    }

    @Test("sizes: 0, empty and orig; sources with and without a scheme; the signed part")
    func sizesAndSources() throws {
        let proportional = try ThumborPath.parse("/unsafe/300x0/https://cdn.example.com/x.png")
        #expect(proportional.request.width == .pixels(300) && proportional.request.height == .proportional)
        #expect(proportional.request.source == "https://cdn.example.com/x.png")
        let original = try ThumborPath.parse("/unsafe/origx/127.0.0.1:8080/p/q.jpg")
        #expect(original.request.width == .original && original.request.height == .proportional)
        #expect(original.request.source == "http://127.0.0.1:8080/p/q.jpg")
        let merged = try ThumborPath.parse("/SIG/256x256/http:/example.com/a.jpg")
        #expect(merged.request.source == "http://example.com/a.jpg")
        #expect(merged.signature == .hmac("SIG"))
        #expect(merged.signedPart == "256x256/http:/example.com/a.jpg")
        let bare = try ThumborPath.parse("/unsafe/example.com/a.jpg")
        #expect(bare.request.width == .proportional && bare.request.height == .proportional && !bare.request.fitsIn)
    }

    @Test("what is not supported is a 400 naming it, never a different image",
          arguments: [
              "/unsafe/trim/300x200/example.com/a.jpg", "/unsafe/meta/300x200/example.com/a.jpg",
              "/unsafe/adaptive-fit-in/300x200/example.com/a.jpg", "/unsafe/full-fit-in/300x200/example.com/a.jpg",
              "/unsafe/300x200/filters:blur(3)/example.com/a.jpg", "/unsafe/300x200/filters:watermark(x,1,1,0)/example.com/a.jpg",
              "/unsafe/300x200/filters:quality(101)/example.com/a.jpg", "/unsafe/300x200/filters:format(tiff)/example.com/a.jpg",
              "/unsafe/300x200/filters:fill(auto)/example.com/a.jpg", "/unsafe/300x200/filters:quality/example.com/a.jpg",
              "/unsafe/300x200/filters:no_upscale(1)/example.com/a.jpg", "/unsafe/300x200/", "/unsafe",
              "/unsafe/300x200/ftp://example.com/a.jpg", "/unsafe/30x40:10x50/example.com/a.jpg",
              "/unsafe/99999999999x1/example.com/a.jpg",
          ])
    func unsupported(path: String) {
        #expect(throws: ServiceError.self) { try ThumborPath.parse(Substring(path)) }
        do {
            _ = try ThumborPath.parse(Substring(path))
        } catch {
            #expect(error.status == 400, "\(path): \(error)")
        }
    }

    @Test("signatures match Python's hmac/base64 for thumbor's scheme; rotation; tampering")
    func signatures() {
        // Expected values computed with Python: base64.urlsafe_b64encode(hmac.new(key, path, sha1).digest()).
        let signer = URLSigner(keys: ["my-security-key"])
        let path = "300x200/smart/thumbor.readthedocs.io/en/latest/_images/logo-thumbor.png"
        #expect(signer.signature(for: path) == "cgRk9BmuZizv2ptQ3JSMMFGpMe0=")
        #expect(URLSigner(keys: ["MY_SECURE_KEY"]).signature(for: "fit-in/256x256/filters:format(webp)/127.0.0.1:8080/a.jpg")
                == "3Z_o8eXM5MuzOGF_nVbEsw-a7wk=")
        #expect(signer.isValid(signature: "cgRk9BmuZizv2ptQ3JSMMFGpMe0=", for: path))
        #expect(signer.isValid(signature: "cgRk9BmuZizv2ptQ3JSMMFGpMe0", for: path), "without padding")
        #expect(signer.isValid(signature: "cgRk9BmuZizv2ptQ3JSMMFGpMe0%3D", for: path), "padding percent-encoded")
        #expect(!signer.isValid(signature: "cgRk9BmuZizv2ptQ3JSMMFGpMe0=", for: path + "x"), "tampered path")
        #expect(!signer.isValid(signature: "dgRk9BmuZizv2ptQ3JSMMFGpMe0=", for: path), "tampered signature")
        #expect(!signer.isValid(signature: "not base64!", for: path))
        let rotating = URLSigner(keys: ["new-key", "my-security-key"])
        #expect(rotating.isValid(signature: "cgRk9BmuZizv2ptQ3JSMMFGpMe0=", for: path), "an older key still verifies")
        #expect(rotating.signature(for: path) != "cgRk9BmuZizv2ptQ3JSMMFGpMe0=", "the first key signs")
    }

    @Test("geometry: cover and cut, fit inside, proportional sides, no upscaling, padding")
    func geometry() throws {
        let source = PixelSize(width: 1920, height: 1080)
        func geometry(_ path: String, _ source: PixelSize = PixelSize(width: 1920, height: 1080)) throws -> ThumbnailGeometry {
            ThumbnailGeometry(request: try ThumborPath.parse(Substring(path)).request, source: source)
        }
        #expect(try geometry("/unsafe/256x256/s.jpg") == ThumbnailGeometry(
            scaled: PixelSize(width: 455, height: 256), cropBox: PixelSize(width: 256, height: 256)))
        #expect(try geometry("/unsafe/fit-in/256x256/s.jpg") == ThumbnailGeometry(scaled: PixelSize(width: 256, height: 144)))
        #expect(try geometry("/unsafe/fit-in/256x256/filters:fill(white)/s.jpg") == ThumbnailGeometry(
            scaled: PixelSize(width: 256, height: 144), paddedBox: PixelSize(width: 256, height: 256)))
        #expect(try geometry("/unsafe/480x0/s.jpg") == ThumbnailGeometry(scaled: PixelSize(width: 480, height: 270)))
        #expect(try geometry("/unsafe/0x0/s.jpg") == ThumbnailGeometry(scaled: source))
        #expect(try geometry("/unsafe/origx100/s.jpg").output == PixelSize(width: 1920, height: 100))
        let small = PixelSize(width: 200, height: 100)
        #expect(try geometry("/unsafe/400x400/s.jpg", small).output == PixelSize(width: 400, height: 400), "thumbor enlarges by default")
        #expect(try geometry("/unsafe/400x400/filters:no_upscale()/s.jpg", small) == ThumbnailGeometry(scaled: small))
        #expect(try geometry("/unsafe/150x150/filters:no_upscale()/s.jpg", small) == ThumbnailGeometry(
            scaled: small, cropBox: PixelSize(width: 150, height: 100)))
    }

    @Test("addresses: loopback, unspecified, private, link-local, multicast and mapped ones are not public")
    func addresses() {
        func v4(_ text: String) -> SourceAddress {
            .v4(text.split(separator: ".").reduce(0) { $0 << 8 | UInt32($1)! })
        }
        for refused in ["127.0.0.1", "0.0.0.0", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
                        "100.64.0.1", "224.0.0.1", "255.255.255.255", "192.0.2.1"] {
            #expect(!v4(refused).isPublic, "\(refused)")
        }
        for allowed in ["8.8.8.8", "172.32.0.1", "93.184.216.34", "100.128.0.1"] {
            #expect(v4(allowed).isPublic, "\(allowed)")
        }
        var loopback6 = [UInt8](repeating: 0, count: 16)
        loopback6[15] = 1
        #expect(!SourceAddress.v6(loopback6).isPublic)
        #expect(!SourceAddress.v6([UInt8](repeating: 0, count: 16)).isPublic)
        #expect(!SourceAddress.v6([0xFE, 0x80] + [UInt8](repeating: 0, count: 14)).isPublic)
        #expect(!SourceAddress.v6([0xFD, 0x00] + [UInt8](repeating: 0, count: 14)).isPublic)
        #expect(!SourceAddress.v6([UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 127, 0, 0, 1]).isPublic, "IPv4-mapped loopback")
        #expect(SourceAddress.v6([0x26, 0x06, 0x28, 0x00] + [UInt8](repeating: 1, count: 12)).isPublic)
    }

    @Test("the allow-list: hosts, ports, subdomains, URL prefixes; loopback refused after resolution")
    func sourcePolicy() async throws {
        let policy = SourcePolicy(allowedSources: ["images.example.com", "*.cdn.example.org", "127.0.0.1:8080",
                                                   "https://assets.example.net/public/"], allowsPrivateAddresses: true)
        #expect(try await policy.check("http://images.example.com/a.jpg").host == "images.example.com")
        #expect(try await policy.check("https://x.cdn.example.org/a.jpg").host == "x.cdn.example.org")
        #expect(try await policy.check("http://127.0.0.1:8080/a.jpg").port == 8080)
        #expect(try await policy.check("https://assets.example.net/public/a.jpg").host == "assets.example.net")
        for refused in ["http://other.example.com/a.jpg", "http://127.0.0.1:8081/a.jpg", "https://assets.example.net/private/a.jpg",
                        "http://images.example.com.evil.org/a.jpg"] {
            await #expect(throws: ServiceError.forbidden("source host \(URL(string: refused)!.host!) is not allowed")) {
                _ = try await policy.check(refused)
            }
        }
        let strict = SourcePolicy()
        for local in ["http://127.0.0.1/a.jpg", "http://localhost/a.jpg", "http://0.0.0.0/a.jpg", "http://[::1]/a.jpg",
                      "http://169.254.169.254/latest/meta-data"] {
            do {
                _ = try await strict.check(local)
                Issue.record("\(local) was allowed")
            } catch {
                #expect(error.status == 403, "\(local): \(error)")
            }
        }
    }

    @Test("format negotiation by Accept")
    func negotiation() {
        #expect(OutputFormat.negotiated(accept: "image/avif,image/webp,*/*", sourceType: .jpeg, hasTransparency: false)
                == (OutputFormat.avif.isEncodable ? .avif : .webp))
        #expect(OutputFormat.negotiated(accept: "image/webp,*/*", sourceType: .jpeg, hasTransparency: false) == .webp)
        #expect(OutputFormat.negotiated(accept: "image/webp;q=0, */*", sourceType: .jpeg, hasTransparency: false) == .jpeg)
        #expect(OutputFormat.negotiated(accept: "*/*", sourceType: .png, hasTransparency: true) == .png)
        #expect(OutputFormat.negotiated(accept: nil, sourceType: .gif, hasTransparency: false) == .jpeg)
        #expect(OutputFormat.negotiated(accept: nil, sourceType: .webp, hasTransparency: true) == .png)
    }
}
