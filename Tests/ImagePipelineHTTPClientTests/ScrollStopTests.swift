import Foundation
import ImageOriginServer
import ImagePipelineKit
import Testing
import TestSupport

/// A scroll that outruns the link and stops: the cells it passed were cancelled mid-download, the cells where it
/// stopped must load. Counts and states only: which fetches ended how, what the decode budget holds, which
/// requests reached the origin after the stop.
@Suite("A scroll that outruns the link and stops: every cell on screen loads, whatever the passed cells left", .serialized)
struct ScrollStopTests {
    static let cellsPerScreen = 4

    @Test("Cancelled progressive fetches, still referenced, give back their decode memory: every cell on screen after the stop gets its image, and only those cells reach the network",
          arguments: CoordinatorDownloader.allCases)
    func cellsOnScreenAfterTheStopLoad(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let progressive = try Data(contentsOf: ProgressiveTests.images.appendingPathComponent("skimage-astronaut-progressive.jpg"))
            let passedItems = 0..<Self.cellsPerScreen
            let stoppedItems = Self.cellsPerScreen..<(2 * Self.cellsPerScreen)
            // The screen the scroll passes is slow and pauses halfway, so each of its cells shows scans and then
            // leaves mid-download; the screen where it stops is served at once.
            for item in passedItems {
                ProgressiveTests.serve(progressive, at: "/cells/\(item).jpg", h, bytesPerSecond: 25_000, pausingHalfway: true)
            }
            for item in stoppedItems { h.server.setAsset(progressive, at: "/cells/\(item).jpg", contentType: "image/jpeg") }
            h.configuration.maxConcurrentImagePipelineDownloadCount = 2 * Self.cellsPerScreen
            func cells(_ items: Range<Int>) -> [(helper: ImageViewFetchHelper, view: TestImageView, path: String)] {
                items.map { item in
                    let (helper, view) = ImageViewFetchHelperTests.helper(h, side: 64, .unload)
                    return (helper, view, "/cells/\(item).jpg")
                }
            }

            let passed = cells(passedItems)
            h.onDelegateQueue { for cell in passed { cell.helper.load(.url(h.server.url(for: cell.path))) } }
            // Each passing cell shows a scan: its fetch holds a decoding session and that session's claim.
            #expect(try await ImageViewFetchHelperTests.eventuallyOnDelegateQueue(h) {
                passed.allSatisfy { ($0.helper.operation?.progressiveFrameCount ?? 0) > 0 }
            })
            let heldBySessions = h.configuration.totalBytesForDecodesInFlight
            #expect(heldBySessions > 0)
            // Room for just those sessions: were their claims kept past the cancellation, the cells after the stop
            // would find none, and their decodes would wait for budget that never comes back.
            h.configuration.maxBytesForDecodesInFlight = heldBySessions
            // Kept, as an app's bookkeeping (or a list of recent fetches) keeps them.
            let passedOperations = h.onDelegateQueue { passed.compactMap(\.helper.operation) }
            #expect(passedOperations.count == Self.cellsPerScreen)
            h.onDelegateQueue {
                for cell in passed {
                    cell.helper.viewWillDisappear()
                    cell.helper.viewDidDisappear()
                }
            }
            #expect(try await eventually(timeout: .seconds(20)) { passedOperations.allSatisfy(\.state.isFinished) })
            #expect(passedOperations.allSatisfy { $0.state == .cancelled })

            // The scroll stops on the next screen.
            let requestsBeforeStop = h.server.requestLog.count
            let stopped = cells(stoppedItems)
            h.onDelegateQueue { for cell in stopped { cell.helper.load(.url(h.server.url(for: cell.path))) } }
            let allLoaded = try await ImageViewFetchHelperTests.eventuallyOnDelegateQueue(h) {
                stopped.allSatisfy { $0.helper.operation?.state == .succeeded && $0.view.displayedImage != nil }
            }
            let states = h.onDelegateQueue { stopped.map { $0.helper.operation?.state } }
            #expect(allLoaded, "on screen after the stop: \(states)")
            // Every decode's memory is back once the images are shown, with the cancelled operations still held.
            #expect(try await eventually(timeout: .seconds(10)) { h.configuration.totalBytesForDecodesInFlight == 0 })
            #expect(passedOperations.allSatisfy { $0.state == .cancelled })
            // After the stop, the network carried the cells on screen, each once, and nothing for the cells passed.
            let afterStop = h.server.requestLog.dropFirst(requestsBeforeStop).map(\.path)
            #expect(afterStop.sorted() == stopped.map(\.path).sorted())
        }
    }
}

/// On a shared link, a cell that already shows a scan lets a cell that shows nothing have the link first.
@Suite("A view helper that yields after its first pixels", .serialized)
struct FirstPixelsFirstTests {
    /// Cell A's progressive JPEG shows a scan; cell B's PNG, which shows nothing until its last row, starts
    /// after. Returns A's requests and B's, in the origin's order, and A's priority after its scan.
    func run(_ kind: CoordinatorDownloader, yields: Bool) async throws -> (a: [OriginRequestRecord], b: [OriginRequestRecord], priority: Operation.QueuePriority?) {
        var outcome: (a: [OriginRequestRecord], b: [OriginRequestRecord], priority: Operation.QueuePriority?) = ([], [], nil)
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let progressive = try Data(contentsOf: ProgressiveTests.images.appendingPathComponent("skimage-astronaut-progressive.jpg"))
            let png = try Data(contentsOf: ProgressiveTests.images.appendingPathComponent("skimage-camera.png"))
            ProgressiveTests.serve(progressive, at: "/a.jpg", h, bytesPerSecond: 25_000, pausingHalfway: true)
            ProgressiveTests.serve(png, at: "/b.png", h, bytesPerSecond: 100_000, pausingHalfway: false)
            let (a, aView) = ImageViewFetchHelperTests.helper(h, side: 64)
            let (b, bView) = ImageViewFetchHelperTests.helper(h, side: 64)
            h.onDelegateQueue {
                a.yieldsAfterFirstPixels = yields
                a.load(.url(h.server.url(for: "/a.jpg")))
            }
            #expect(try await ImageViewFetchHelperTests.eventuallyOnDelegateQueue(h) {
                (a.operation?.progressiveFrameCount ?? 0) > 0
            })
            outcome.priority = h.onDelegateQueue { a.operation?.priority }
            h.onDelegateQueue { b.load(.url(h.server.url(for: "/b.png"))) }
            let loaded = try await ImageViewFetchHelperTests.eventuallyOnDelegateQueue(h) {
                [a, b].allSatisfy { $0.operation?.state == .succeeded } && aView.displayedImage != nil && bView.displayedImage != nil
            }
            #expect(loaded)
            outcome.a = h.server.requestLog.filter { $0.path == "/a.jpg" }
            outcome.b = h.server.requestLog.filter { $0.path == "/b.png" }
        }
        return outcome
    }

    @Test("On: the scan lowers the fetch to very low; its download is suspended for the other cell's and continues with a range request after it",
          arguments: CoordinatorDownloader.allCases)
    func yields(kind: CoordinatorDownloader) async throws {
        let (a, b, priority) = try await run(kind, yields: true)
        #expect(priority == .veryLow)
        #expect(b.count == 1 && a.count == 2, "requests: a \(a.count), b \(b.count)")
        #expect(a.first?.range == nil && a.last?.range?.hasPrefix("bytes=") == true)
        #expect(a.count == 2 && b.count == 1 && a[1].sequence > b[0].sequence, "a continues after b's request")
        #expect(a.first?.clientWentAway == true, "a's first response was left when b's download came")
    }

    @Test("Off (TIP's helper): the fetch keeps its priority and its one download", arguments: CoordinatorDownloader.allCases)
    func keeps(kind: CoordinatorDownloader) async throws {
        let (a, b, priority) = try await run(kind, yields: false)
        #expect(priority == .normal)
        #expect(a.count == 1 && b.count == 1 && a.first?.range == nil)
    }
}
