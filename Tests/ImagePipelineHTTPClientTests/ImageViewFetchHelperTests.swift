import Foundation
import ImageOriginServer
import ImagePipelineKit
import Testing
import TestSupport

/// A view of a headless grid: a size, and the image it was given. Touched on the delegate queue only.
final class TestImageView: ImageDisplaying, @unchecked Sendable {
    var displayedImage: ImageContainer?
    let displaySize: PixelSize

    init(side: Int) { displaySize = PixelSize(width: side, height: side) }
}

@Suite("ImageViewFetchHelper: TIP's image view fetch helper", .serialized)
struct ImageViewFetchHelperTests {
    /// Reads `body` on the delegate queue until it holds (the helper and its view live there).
    static func eventuallyOnDelegateQueue(_ h: FetchHarness, _ body: @escaping @Sendable () -> Bool) async throws -> Bool {
        try await eventually(timeout: .seconds(20)) { h.onDelegateQueue(body) }
    }

    static func helper(_ h: FetchHarness, side: Int, _ behavior: DisappearanceBehavior = .unload) -> (ImageViewFetchHelper, TestImageView) {
        let view = TestImageView(side: side)
        let helper = h.onDelegateQueue { () -> ImageViewFetchHelper in
            let helper = ImageViewFetchHelper(view: view, pipeline: h.pipeline)
            helper.disappearanceBehavior = behavior
            return helper
        }
        return (helper, view)
    }

    @Test("Loads at the view's size; a second view of the same size shows the rendered image before load returns")
    func loadsAtViewSize() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            let url = h.server.url(for: "/a.jpg")
            let (helper, view) = Self.helper(h, side: 64)
            h.onDelegateQueue { helper.load(.url(url)) }
            #expect(try await Self.eventuallyOnDelegateQueue(h) { helper.shownResult?.source == .network })
            let size = h.onDelegateQueue { view.displayedImage?.dimensions }
            #expect(size.map { min($0.width, $0.height) == 64 } == true)   // aspect fill covers the view
            let (second, secondView) = Self.helper(h, side: 64)
            let shownAtReturn = h.onDelegateQueue { () -> Bool in
                second.load(.url(url))
                return secondView.displayedImage != nil
            }
            #expect(shownAtReturn)
            #expect(h.server.requestLog.count == 1)
            _ = (helper, second)
        }
    }

    @Test("Disappearing: cancel stops the fetch; lower priority drops to very low and back; unload clears and reloads; placeholder shrinks to 180 px and reloads")
    func disappearanceBehaviors() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            let image = h.image
            h.server.setAsset(image, at: "/slow.jpg", contentType: "image/jpeg")
            h.server.stallNextResponse(to: "/slow.jpg")   // the view disappears mid-body
            let slow = h.server.url(for: "/slow.jpg")

            let (cancelling, _) = Self.helper(h, side: 64, .cancelImageFetch)
            h.onDelegateQueue { cancelling.load(.url(slow)) }
            #expect(try await Self.eventuallyOnDelegateQueue(h) { cancelling.progress > 0 })
            let cancelled = try #require(h.onDelegateQueue { cancelling.operation })
            h.onDelegateQueue { cancelling.viewDidDisappear() }
            #expect(try await eventually { cancelled.state == .cancelled })

            let (lowering, _) = Self.helper(h, side: 64, .lowerImageFetchPriority)
            h.onDelegateQueue { lowering.load(.request(GenericFetchRequest(url: slow, identifier: "slow-2"))) }
            let lowered = try #require(h.onDelegateQueue { lowering.operation })
            h.onDelegateQueue { lowering.viewDidDisappear() }
            #expect(lowered.priority == .veryLow)
            h.onDelegateQueue { lowering.viewWillAppear() }
            #expect(lowered.priority == .normal)
            lowered.cancel()

            let url = h.server.url(for: "/a.jpg")
            let (unloading, unloadView) = Self.helper(h, side: 64, .unload)
            h.onDelegateQueue { unloading.load(.url(url)) }
            #expect(try await Self.eventuallyOnDelegateQueue(h) { unloadView.displayedImage != nil && !unloading.isLoading })
            h.onDelegateQueue { unloading.viewDidDisappear() }
            #expect(h.onDelegateQueue { unloadView.displayedImage == nil })
            h.onDelegateQueue { unloading.viewWillAppear() }
            #expect(try await Self.eventuallyOnDelegateQueue(h) { unloadView.displayedImage != nil })

            let (replacing, replaceView) = Self.helper(h, side: 400, .replaceWithPlaceholder)
            h.onDelegateQueue { replacing.load(.url(url)) }
            #expect(try await Self.eventuallyOnDelegateQueue(h) { replaceView.displayedImage != nil && !replacing.isLoading })
            h.onDelegateQueue { replacing.viewDidDisappear() }
            let placeholder = h.onDelegateQueue { (replaceView.displayedImage?.dimensions, replacing.isShowingPlaceholder) }
            #expect(placeholder.0.map { max($0.width, $0.height) <= 180 } == true && placeholder.1)
            h.onDelegateQueue { replacing.viewWillAppear() }
            #expect(try await Self.eventuallyOnDelegateQueue(h) {
                !replacing.isShowingPlaceholder && (replaceView.displayedImage?.dimensions.width ?? 0) > 180
            })
        }
    }

    @Test("The default preview decision: a cached image at least as large as the view is enough, so no request is made")
    func previewIsEnough() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            _ = await h.fetch(h.request())   // I via /a.jpg, 640×427
            h.server.setAsset(try Data(contentsOf: PreviewTests.smallerImage), at: "/b.png", contentType: "image/png")
            let (helper, view) = Self.helper(h, side: 100)
            let request = GenericFetchRequest(url: h.server.url(for: "/b.png"), identifier: "I",
                                              targetSizing: TargetSizing(dimensions: view.displaySize, contentMode: .fill))
            h.onDelegateQueue { helper.load(.request(request)) }
            #expect(try await Self.eventuallyOnDelegateQueue(h) { !helper.isLoading && helper.operation != nil })
            let state = h.onDelegateQueue { (helper.shownResult?.url, helper.didFail, view.displayedImage != nil) }
            #expect(state.0 == h.server.url(for: "/a.jpg") && !state.1 && state.2)
            #expect(h.server.requestLog.map(\.path) == ["/a.jpg"])
        }
    }

    @Test("A helper whose cache-only fetch failed reloads when another fetch stores its image; retryAllFailedLoads retries a 404")
    func reloadsOnStoreAndRetry() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            let (helper, view) = Self.helper(h, side: 64)
            let cacheOnly = h.request(target: view.displaySize, mode: .fill, sources: [.memoryCache, .diskCache])
            h.onDelegateQueue { helper.load(.request(cacheOnly)) }
            #expect(try await Self.eventuallyOnDelegateQueue(h) { helper.didFail })
            // Another fetch of the same identifier and URL stores the image: the helper reloads from the caches.
            _ = await h.fetch(h.request())
            #expect(try await Self.eventuallyOnDelegateQueue(h) { view.displayedImage != nil && !helper.didFail })

            let (retrying, retryView) = Self.helper(h, side: 64)
            let missing = h.server.url(for: "/later.jpg")
            h.onDelegateQueue { retrying.load(.url(missing)) }
            #expect(try await Self.eventuallyOnDelegateQueue(h) { retrying.didFail })
            h.server.setAsset(h.image, at: "/later.jpg", contentType: "image/jpeg")
            h.onDelegateQueue { ImageViewFetchHelper.retryAllFailedLoads() }
            #expect(try await Self.eventuallyOnDelegateQueue(h) { retryView.displayedImage != nil })
        }
    }
}
