import Foundation
import ImageOriginServer
import ImagePipelineKit
import ImagePipelineRedis
import TestSupport
import Testing
@testable import ImagePipelineService

/// Every refusal and limit of the service answered with its status and a short text, never a hang; the
/// refusals that protect the origin and the network never reach the origin.
@Suite("image service: signatures, sources, limits, overload")
struct ImageServiceSafetyTests {
    @Test("signed paths render; a bad, tampered or missing signature is a 403 that never reaches the origin")
    func signatures() async throws {
        let fixture = try await ServiceFixture.start { $0.allowsUnsafeURLs = false; $0.securityKeys = ["new-key", "old-key"] }
        fixture.origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/rocket.jpg")
        let signedPart = "64x64/\(fixture.source)/rocket.jpg"
        let signed = await fixture.get(URLSigner(keys: ["old-key"]).signedPath(for: signedPart))
        #expect(signed.status == 200, "a rotated-out key still verifies: \(signed.text)")
        fixture.origin.clearLog()
        let good = URLSigner(keys: ["new-key"]).signature(for: signedPart)
        for path in ["/unsafe/\(signedPart)", "/\(good)/65x64/\(fixture.source)/rocket.jpg",
                     "/\(URLSigner(keys: ["guess"]).signature(for: signedPart))/\(signedPart)", "/AAAA/\(signedPart)"] {
            let response = await fixture.get(path)
            #expect(response.status == 403, "\(path): \(response.text)")
            #expect(response.header("Content-Type")?.hasPrefix("text/plain") == true)
        }
        #expect(fixture.origin.requestLog.isEmpty)
        await fixture.shutdown()
    }

    @Test("sources off the allow-list, and loopback sources unless allowed, are refused before any request")
    func sources() async throws {
        let fixture = try await ServiceFixture.start(allowsPrivateAddresses: false)
        fixture.origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/rocket.jpg")
        let loopback = await fixture.get("/unsafe/64x64/\(fixture.source)/rocket.jpg")
        #expect(loopback.status == 403 && loopback.text.contains("non-public address"), "\(loopback.text)")
        let offList = await fixture.get("/unsafe/64x64/127.0.0.2:\(fixture.origin.port)/rocket.jpg")
        #expect(offList.status == 403 && offList.text.contains("not allowed"))
        #expect(fixture.origin.requestLog.isEmpty)
        await fixture.shutdown()
    }

    @Test("the origin's answers: 404 stays 404, an error status or a redirect is a 502, bytes that are no image a 422")
    func originFailures() async throws {
        let fixture = try await ServiceFixture.start()
        fixture.origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/rocket.jpg")
        fixture.origin.setAsset(Data(repeating: 0x41, count: 5_000), at: "/text.jpg", contentType: "image/jpeg")
        fixture.origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/broken.jpg")
        fixture.origin.setFaults([.status(500)], for: "/broken.jpg")
        fixture.origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/moved.jpg")
        fixture.origin.setFaults([.redirect(to: "http://169.254.169.254/latest/meta-data")], for: "/moved.jpg")
        fixture.origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/lying.jpg")
        fixture.origin.setFaults([.wrongContentLength(200_000)], for: "/lying.jpg")   // claims more than it sends
        let cases: [(String, Int)] = [("/missing.jpg", 404), ("/broken.jpg", 502), ("/moved.jpg", 502), ("/text.jpg", 422),
                                      ("/lying.jpg", 502)]
        for (path, status) in cases {
            let response = await fixture.get("/unsafe/64x64/\(fixture.source)\(path)")
            #expect(response.status == status, "\(path): \(response.status) \(response.text)")
        }
        // The origin down: nothing listens on its port any more.
        try await fixture.origin.shutdown()
        let down = await fixture.get("/unsafe/64x64/\(fixture.source)/rocket-again.jpg")
        #expect(down.status == 502, "\(down.status) \(down.text)")
        await fixture.shutdown()
    }

    @Test("limits: source bytes 413, source pixels 413, output pixels 400, path length 414, deadline 504")
    func limits() async throws {
        let fixture = try await ServiceFixture.start {
            $0.limits.maxSourceBytes = 200_000
            $0.limits.maxSourcePixels = 1_000_000
            $0.limits.maxOutputPixels = 1_000_000
            $0.limits.maxPathBytes = 300
            $0.limits.requestDeadline = .seconds(1)
        }
        fixture.origin.setAsset(try ServiceFixture.photo("skimage-hubble_deep_field.jpg"), at: "/large.jpg")   // 528 KB
        fixture.origin.setAsset(try DecodeBomb.jpeg(side: 20_000), at: "/bomb.jpg")
        fixture.origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/rocket.jpg")
        fixture.origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/stalled.jpg")
        fixture.origin.setFaults([.stallAfterBytes(2_000)], for: "/stalled.jpg")
        fixture.origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/endless.jpg")
        fixture.origin.setFaults([.endlessBody], for: "/endless.jpg")
        let cases: [(String, Int)] = [
            ("/unsafe/64x64/\(fixture.source)/large.jpg", 413),
            ("/unsafe/64x64/\(fixture.source)/bomb.jpg", 413),
            ("/unsafe/2000x2000/\(fixture.source)/rocket.jpg", 400),
            ("/unsafe/64x64/\(fixture.source)/" + String(repeating: "a", count: 300) + ".jpg", 414),
            ("/unsafe/64x64/\(fixture.source)/stalled.jpg", 504),
            ("/unsafe/64x64/\(fixture.source)/endless.jpg", 413),
        ]
        for (path, status) in cases {
            let response = await fixture.get(path)
            #expect(response.status == status, "\(path.prefix(80)): \(response.status) \(response.text)")
            #expect(!response.text.isEmpty)
        }
        await fixture.shutdown()
    }

    @Test("a fleet tier on a Redis that is down is a miss: the thumbnail still renders from the origin")
    func redisDown() async throws {
        let fixture = try await ServiceFixture.start()
        fixture.origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/rocket.jpg")
        // Nothing listens on port 1: every Redis call fails at once.
        let client = RedisClient(configuration: RedisConfiguration(address: .tcp(host: "127.0.0.1", port: 1)))
        fixture.pipelines.sources.sharedCache = SharedCacheConfiguration(cache: RedisImageCache(client: client), namespace: "test")
        let response = await fixture.get("/unsafe/64x64/\(fixture.source)/rocket.jpg")
        #expect(response.status == 200, "\(response.text)")
        #expect(fixture.origin.requests(to: "/rocket.jpg").count == 1)
        await client.close()
        await fixture.shutdown()
    }

    @Test("overload: past the renders in flight and the waiting line, a 503 with Retry-After at once; cache hits still answer")
    func overload() async throws {
        let fixture = try await ServiceFixture.start {
            $0.limits.maxRendersInFlight = 1
            $0.limits.maxRendersWaiting = 1
            $0.limits.retryAfterSeconds = 2
        }
        let photo = try ServiceFixture.photo(ImageServiceTests.rocket)
        fixture.origin.setAsset(photo, at: "/cached.jpg")
        let cachedPath = "/unsafe/32x32/\(fixture.source)/cached.jpg"
        #expect(await fixture.get(cachedPath).status == 200)
        for name in ["a", "b", "c"] {
            fixture.origin.setAsset(photo, at: "/\(name).jpg")
            fixture.origin.setFaults([.pauseAfterBytes(1_000, for: .seconds(2))], for: "/\(name).jpg")
        }
        let running = Task { await fixture.get("/unsafe/64x64/\(fixture.source)/a.jpg") }
        #expect(try await eventually { fixture.origin.requests(to: "/a.jpg").count == 1 })
        let waiting = Task { await fixture.get("/unsafe/64x64/\(fixture.source)/b.jpg") }
        #expect(try await eventually { fixture.service.admissionCounts.waiting == 1 })
        let shed = await fixture.get("/unsafe/64x64/\(fixture.source)/c.jpg")
        #expect(shed.status == 503 && shed.header("Retry-After") == "2", "\(shed.status) \(shed.text)")
        #expect(fixture.origin.requests(to: "/c.jpg").isEmpty)
        #expect(await fixture.get(cachedPath).status == 200, "a cached answer needs no render slot")
        #expect(await running.value.status == 200)
        #expect(await waiting.value.status == 200, "the waiting render got the slot")
        await fixture.shutdown()
    }

    @Test("a render's decode waits for one of the processing slots, and renders once one is free")
    func processingSlots() async throws {
        let fixture = try await ServiceFixture.start { $0.limits.maxRendersProcessing = 1 }
        let slots = try #require(fixture.pipelines.configuration.processingSlots)
        #expect(slots.count == 1)
        fixture.origin.setAsset(try ServiceFixture.photo(ImageServiceTests.rocket), at: "/rocket.jpg")
        let (held, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        Thread { slots.withSlot { held.signal(); release.wait() } }.start()
        #expect(held.wait(timeout: .now() + 10) == .success)
        let render = Task { await fixture.get("/unsafe/64x64/\(fixture.source)/rocket.jpg") }
        #expect(try await eventually { slots.waitingCount == 1 }, "the downloaded source waits for the slot to decode")
        release.signal()
        let response = await render.value
        #expect(response.status == 200, "\(response.text)")
        await fixture.shutdown()
    }
}
