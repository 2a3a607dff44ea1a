import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import Testing
import TestSupport

extension DownloaderBehaviourTests {
    /// A download cancelled before, during or right after its start ends exactly once, as cancelled, and tells the
    /// delegate nothing after that.
    @Suite("Downloaders cancelled", .timeLimit(.minutes(2)))
    struct Cancellation {
        @Test("Cancel halfway through a shaped download: one .cancelled, nothing after, the server sees the client go",
              arguments: DownloaderKind.allCases)
        func cancelHalfway(kind: DownloaderKind) async throws {
            try await DownloadHarness.run(kind) { harness in
                let asset = Fixtures.hubbleJPEG
                harness.server.setAsset(asset, at: "/hubble.jpg")
                let shaping = OriginShaping(bytesPerSecond: 200_000, firstByteLatency: .milliseconds(50))
                harness.server.setShaping(shaping, for: "/hubble.jpg")
                // The response stalls at 300 KB: the cancel lands mid-body however late the client hears of the bytes.
                harness.server.setFaults([.stallAfterBytes(300_000)], for: "/hubble.jpg", count: 1)
                let record = try await harness.download(harness.request("/hubble.jpg"), cancelAfterBytes: 100_000)
                #expect(record.completions.count == 1)
                #expect(record.error == .cancelled)
                #expect(record.violations.isEmpty, "\(record.violations)")
                #expect(record.body.count >= 100_000)
                #expect(record.body.count < asset.count)
                #expect(record.body == asset.prefix(record.body.count))
                try await harness.server.waitForCompletedRequests(count: 1, timeout: .seconds(5))
                let logged = try #require(harness.server.requestLog.first)
                #expect(logged.clientWentAway)
                #expect(logged.bytesSent < asset.count)
            }
        }

        @Test("Cancel from another thread, before or during the transfer, yields exactly one completion",
              arguments: DownloaderKind.allCases)
        func cancelRaces(kind: DownloaderKind) async throws {
            try await DownloadHarness.run(kind) { harness in
                harness.server.setAsset(Fixtures.rocketJPEG, at: "/rocket.jpg")
                var delegates: [RecordingDelegate] = []
                for index in 0..<30 {
                    let delegate = RecordingDelegate()
                    let task = harness.downloader.startDownload(harness.request("/rocket.jpg"), delegate: delegate)
                    delegates.append(delegate)
                    // 0 µs cancels before anything can arrive; the longer delays race with the transfer's end.
                    let delay = index % 3 == 0 ? 0 : index * 300
                    DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(delay)) {
                        task.cancel()
                        task.cancel()
                    }
                }
                for delegate in delegates {
                    let record = try await delegate.waitForCompletion(timeout: .seconds(20), settle: .milliseconds(20))
                    #expect(record.completions.count == 1)
                    #expect(record.violations.isEmpty, "\(record.violations)")
                    let error = record.completions.first ?? nil
                    #expect(error == nil || error == .cancelled)
                    if error == nil { #expect(record.body == Fixtures.rocketJPEG) }
                }
            }
        }

        @Test("Cancelling right after start delivers only .cancelled", arguments: DownloaderKind.allCases)
        func cancelImmediately(kind: DownloaderKind) async throws {
            try await DownloadHarness.run(kind) { harness in
                harness.server.setAsset(Fixtures.rocketJPEG, at: "/rocket.jpg")
                // The head waits 1 s: on a loaded machine an unshaped loopback download can complete before the next
                // line runs, and a completion delivered before cancel() rightly stays.
                harness.server.setShaping(OriginShaping(firstByteLatency: .seconds(1)), for: "/rocket.jpg")
                let delegate = RecordingDelegate()
                let task = harness.downloader.startDownload(harness.request("/rocket.jpg"), delegate: delegate)
                task.cancel()
                let record = try await delegate.waitForCompletion(timeout: .seconds(10), settle: .milliseconds(300))
                #expect(record.error == .cancelled)
                #expect(record.response == nil)
                #expect(record.body.isEmpty)
                #expect(record.violations.isEmpty, "\(record.violations)")
            }
        }
    }
}
