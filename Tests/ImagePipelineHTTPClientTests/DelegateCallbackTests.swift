import Foundation
import ImagePipelineKit
import Testing
import TestSupport

@Suite("A delegate hears only the callbacks it has", .serialized)
struct DelegateCallbackTests {
    /// Runs a cold fetch (a download) whose delegate has `callbacks`, and returns what it heard and how many
    /// turns the pipeline took on the delegate queue for it.
    static func coldFetch(_ h: FetchHarness,
                          callbacks: FetchDelegateCallbacks) async -> ([RecordingFetchDelegate.Event], Int) {
        // Process-wide; no other test of this process's phase turns it off meanwhile (this suite is serialized).
        let wasMeasuring = DelegateQueueDiagnostics.measuresWork
        DelegateQueueDiagnostics.measuresWork = true
        defer { DelegateQueueDiagnostics.measuresWork = wasMeasuring }
        let queue = h.configuration.delegateQueue
        let before = DelegateQueueDiagnostics.turnCount(on: queue)
        let (delegate, operation) = await h.fetch(h.request(), callbacks: callbacks)
        #expect(operation.state == .succeeded)
        // A turn is tallied as it returns: a block after it on the queue waits for that.
        h.onDelegateQueue {}
        return (delegate.events, DelegateQueueDiagnostics.turnCount(on: queue) - before)
    }

    @Test("Only the final callback: a download's fetch takes one delegate-queue turn, with its store notification",
          arguments: CoordinatorDownloader.allCases)
    func finalOnly(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let stored = Recorded<StoredImageInfo>()
            let name = ImagePipeline.didStoreCachedImageNotification
            let token = NotificationCenter.default.addObserver(forName: name, object: h.pipeline, queue: nil) { note in
                if let info = StoredImageInfo(notification: note) { stored.append(info) }
            }
            defer { NotificationCenter.default.removeObserver(token) }
            let (events, turns) = await Self.coldFetch(h, callbacks: [])
            #expect(events == [.final(.network)])
            #expect(turns == 1)
            #expect(stored.count == 1 && stored.all.first?.identifier == "I")
        }
    }

    @Test("Every callback: the start, each source tried and the progress come, in more turns",
          arguments: CoordinatorDownloader.allCases)
    func everyCallback(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let (events, turns) = await Self.coldFetch(h, callbacks: .all)
            #expect(events.first == .start && events.last == .final(.network))
            let hasProgress = events.contains { if case .progress = $0 { true } else { false } }
            #expect(events.contains(.attempt(.network)) && hasProgress)
            #expect(turns > 1)
        }
    }

    @Test("Progress only: no start and no sources tried", arguments: CoordinatorDownloader.allCases)
    func progressOnly(kind: CoordinatorDownloader) async throws {
        try await FetchHarness.run(kind) { (h: FetchHarness) async throws in
            let (events, _) = await Self.coldFetch(h, callbacks: .progress)
            #expect(events.last == .final(.network))
            #expect(events.dropLast().allSatisfy { if case .progress = $0 { true } else { false } } && events.count > 1)
        }
    }
}
