import Foundation
import Testing
@testable import ImagePipelineKit

/// A view for the helpers below: touched on the delegate queue only.
private final class WatchedView: ImageDisplaying, @unchecked Sendable {
    var displayedImage: ImageContainer?
    let displaySize = PixelSize(width: 32, height: 32)
}

@Suite("Stored-image watchers: a store wakes the helpers of its identifier only")
struct StoredImageWatchersTests {
    @Test("A helper watches its current source's identifier, moves with it, and stops when cleared or released")
    func followsTheSource() throws {
        let configuration = GlobalConfiguration()
        let queue = DispatchQueue(label: "watchers-tests.delegate")
        configuration.delegateQueue = queue
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-watchers-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let pipeline = try ImagePipeline(identifier: "watchers", configuration: configuration, cacheRoot: root)
        let watchers = pipeline.storedImageWatchers
        // Cache-only requests of images nobody stored: the fetches fail at once, the helpers keep watching.
        func source(_ identifier: String) -> ImageViewFetchHelper.Source {
            .request(GenericFetchRequest(url: URL(string: "http://t/\(identifier)")!, identifier: identifier,
                                         loadingSources: [.memoryCache, .diskCache]))
        }
        queue.sync {
            let view = WatchedView(), otherView = WatchedView()
            let helper = ImageViewFetchHelper(view: view, pipeline: pipeline)
            #expect(watchers.helpers(watching: "A").isEmpty)
            helper.load(source("A"))
            #expect(watchers.helpers(watching: "A").map(ObjectIdentifier.init) == [ObjectIdentifier(helper)])
            helper.load(source("B"))
            #expect(watchers.helpers(watching: "A").isEmpty && watchers.helpers(watching: "B").count == 1)
            var other: ImageViewFetchHelper? = ImageViewFetchHelper(view: otherView, pipeline: pipeline)
            other?.load(source("B"))
            #expect(watchers.helpers(watching: "B").count == 2)
            other = nil
            #expect(watchers.helpers(watching: "B").map(ObjectIdentifier.init) == [ObjectIdentifier(helper)])
            helper.load(nil)
            #expect(watchers.helpers(watching: "B").isEmpty)
        }
    }
}
