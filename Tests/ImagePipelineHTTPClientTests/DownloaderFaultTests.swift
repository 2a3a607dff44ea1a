import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import Testing
import TestSupport

extension DownloaderBehaviourTests {
    /// A server that stalls, never answers, or breaks the connection: each fault ends in its own typed error, with
    /// every byte that arrived before it delivered, and a slow but steady body is not mistaken for a stall.
    @Suite("Downloaders against a stalling or failing server", .timeLimit(.minutes(2)))
    struct Faults {
        @Test("A server that stalls after the head fails with idleTimedOut after the idle timeout",
              arguments: DownloaderKind.allCases)
        func stallIsIdleTimeout(kind: DownloaderKind) async throws {
            try await DownloadHarness.run(kind) { harness in
                harness.server.setAsset(Fixtures.rocketJPEG, at: "/rocket.jpg")
                harness.server.setFaults([.stallAfterBytes(1000)], for: "/rocket.jpg")
                let started = ContinuousClock.now
                let limits = DownloadLimits(idleTimeout: .seconds(1))
                let record = try await harness.download(harness.request("/rocket.jpg", limits: limits))
                let elapsed = try #require(record.completedAt) - started
                #expect(record.error == .idleTimedOut)
                #expect(record.response?.statusCode == 200)
                #expect(record.body == Fixtures.rocketJPEG.prefix(1000))
                #expect(elapsed >= .milliseconds(900))
                #expect(elapsed < .seconds(6))
            }
        }

        @Test("A server that never sends the head fails within the idle timeout", arguments: DownloaderKind.allCases)
        func silentServerTimesOut(kind: DownloaderKind) async throws {
            try await DownloadHarness.run(kind) { harness in
                harness.server.setAsset(Fixtures.rocketJPEG, at: "/slow.jpg")
                harness.server.setShaping(OriginShaping(firstByteLatency: .seconds(30)), for: "/slow.jpg")
                let started = ContinuousClock.now
                let limits = DownloadLimits(idleTimeout: .seconds(1))
                let record = try await harness.download(harness.request("/slow.jpg", limits: limits))
                let elapsed = try #require(record.completedAt) - started
                #expect(record.error == .idleTimedOut)
                #expect(record.response == nil)
                #expect(elapsed < .seconds(6))
            }
        }

        @Test("A connect that never completes fails with connectTimedOut", arguments: DownloaderKind.allCases)
        func connectTimeout(kind: DownloaderKind) async throws {
            let listener = try UnacceptedListener()
            let downloader = kind.makeDownloader(clientConnectTimeout: .seconds(3))
            let delegate = RecordingDelegate()
            let started = ContinuousClock.now
            _ = downloader.startDownload(
                DownloadRequest(url: listener.url,
                                limits: DownloadLimits(connectTimeout: .seconds(1), idleTimeout: .seconds(20))),
                delegate: delegate)
            let record = try await delegate.waitForCompletion(timeout: .seconds(15))
            let elapsed = try #require(record.completedAt) - started
            #expect(record.error == .connectTimedOut)
            #expect(record.response == nil)
            #expect(elapsed >= .milliseconds(900))
            #expect(elapsed < .seconds(6))
            try await (downloader as? HTTPClientDownloader)?.shutdown()
            withExtendedLifetime(listener) {}
        }

        @Test("A connection closed after N bytes: the response, exactly N bytes, then a transport error",
              arguments: DownloaderKind.allCases)
        func closeAfterBytes(kind: DownloaderKind) async throws {
            try await DownloadHarness.run(kind) { harness in
                harness.server.setAsset(Fixtures.rocketJPEG, at: "/rocket.jpg")
                harness.server.setFaults([.closeAfterBytes(5000)], for: "/rocket.jpg")
                let record = try await harness.download(harness.request("/rocket.jpg"))
                #expect(record.response?.statusCode == 200)
                #expect(record.response?.expectedContentLength == Fixtures.rocketJPEG.count)
                #expect(record.body == Fixtures.rocketJPEG.prefix(5000))
                #expect(record.error?.code == .transport)
                #expect(record.violations.isEmpty, "\(record.violations)")
            }
        }

        @Test("A body cut short of its declared length delivers every byte it had, then the transport error",
              arguments: DownloaderKind.allCases)
        func allBytesThenError(kind: DownloaderKind) async throws {
            try await DownloadHarness.run(kind) { harness in
                let asset = Fixtures.rocketJPEG
                harness.server.setAsset(asset, at: "/rocket.jpg")
                // Declares one byte more than it sends, then closes: the coordinator sees all the asset's bytes and an
                // error, the raw material of TIP's "unnecessary error" rule.
                harness.server.setFaults([.wrongContentLength(asset.count + 1)], for: "/rocket.jpg")
                let record = try await harness.download(harness.request("/rocket.jpg"))
                #expect(record.response?.expectedContentLength == asset.count + 1)
                #expect(record.body == asset)
                #expect(record.error?.code == .transport)
                #expect(record.violations.isEmpty, "\(record.violations)")
            }
        }

        @Test("A slow but steady body never trips the idle timeout", arguments: DownloaderKind.allCases)
        func slowSteadyBodyIsNotIdle(kind: DownloaderKind) async throws {
            try await DownloadHarness.run(kind) { harness in
                harness.server.setAsset(Fixtures.rocketJPEG, at: "/rocket.jpg")
                // About 2.2 s in total, never more than 10 ms between ticks.
                let shaping = OriginShaping(bytesPerSecond: 50_000, firstByteLatency: .milliseconds(500))
                harness.server.setShaping(shaping, for: "/rocket.jpg")
                let started = ContinuousClock.now
                let limits = DownloadLimits(idleTimeout: .seconds(1))
                let record = try await harness.download(harness.request("/rocket.jpg", limits: limits))
                #expect(record.error == nil)
                #expect(record.body == Fixtures.rocketJPEG)
                #expect(try #require(record.completedAt) - started > .seconds(1.5))
            }
        }

        @Test("A connection reset after N bytes: N bytes then a transport error", arguments: DownloaderKind.allCases)
        func resetAfterBytes(kind: DownloaderKind) async throws {
            try await DownloadHarness.run(kind) { harness in
                harness.server.setAsset(Fixtures.rocketJPEG, at: "/rocket.jpg")
                harness.server.setFaults([.resetAfterBytes(3000)], for: "/rocket.jpg")
                let record = try await harness.download(harness.request("/rocket.jpg"))
                #expect(record.error?.code == .transport)
                #expect(record.body.count <= 3000)
                #expect(record.body == Fixtures.rocketJPEG.prefix(record.body.count))
            }
        }
    }
}
