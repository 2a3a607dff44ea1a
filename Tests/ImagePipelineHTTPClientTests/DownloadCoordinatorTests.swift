import Foundation
import ImageOriginServer
import ImagePipelineHTTPClient
import ImagePipelineKit
import Testing
import TestSupport

@Suite("Download coordinator: sharing, priority, resume (scenarios 21-36)")
struct DownloadCoordinatorTests {
    @Test("A cold load delivers the image's bytes once, with progress that never goes back", arguments: CoordinatorDownloader.allCases)
    func coldLoad(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            let recorder = h.load(h.request())
            let outcome = await recorder.outcome()
            let result = try #require(outcome.result, "\(outcome) after \(recorder.totals.last ?? 0) bytes; log: \(h.server.requestLog.map { ($0.status, $0.bytesSent, $0.clientWentAway) })")
            #expect(result.data == h.image && !result.wasResumed && result.isOwner && result.unnecessaryError == nil)
            #expect(recorder.responses.map(\.status) == [200] && recorder.responses.first?.expected == h.image.count)
            #expect(recorder.totals == recorder.totals.sorted() && recorder.totals.last == h.image.count)
            #expect(h.server.requestLog.count == 1)
            #expect(h.coordinator.activeDownloadCount == 0)
        }
    }

    @Test("A load after an identical download succeeded, before its owner stored the image, gets its bytes without a request; after resultStored() loads download again",
          arguments: CoordinatorDownloader.allCases)
    func unstoredResultIsShared(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            let owner = LoadRecorder(cancelAfterBytes: nil)
            owner.attachment = h.coordinator.load(h.request(), client: owner, sharesResultUntilStored: true)
            #expect(try #require(await owner.outcome().result).isOwner)
            #expect(h.server.requestLog.count == 1)

            let late = h.load(h.request())
            let shared = try #require(await late.outcome().result)
            #expect(shared.data == h.image && !shared.isOwner && !shared.wasResumed)
            #expect(late.responses.map(\.status) == [200] && late.totals == [h.image.count])
            #expect(h.server.requestLog.count == 1)
            // Another identity (here: another pipeline) never gets it.
            _ = await h.load(h.request(pipeline: "other")).outcome()
            #expect(h.server.requestLog.count == 2)

            owner.attachment?.resultStored()
            #expect(try #require(await h.load(h.request()).outcome().result).isOwner)
            #expect(h.server.requestLog.count == 3)
            // A load made without sharesResultUntilStored leaves nothing behind when it ends.
            _ = await h.load(h.request()).outcome()
            #expect(h.server.requestLog.count == 4)
        }
    }

    @Test("Scenario 28: two fetches 100 ms apart share one request; the late one gets the bytes so far; cancelling the first leaves the second", arguments: CoordinatorDownloader.allCases)
    func coalescing(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            // ~2.2 s: wide margins for a 2-core machine running other suites at the same time.
            h.server.setShaping(OriginShaping(bytesPerSecond: 50_000), for: "/a.jpg")
            let first = h.load(h.request())
            try await Task.sleep(for: .milliseconds(100))
            let second = h.load(h.request())
            #expect(first.attachment?.downloadIdentifier != nil, "the first load ended early: \(first.state.withLock { $0.outcome.map { "\($0)" } ?? "-" })")
            #expect(first.attachment?.downloadIdentifier == second.attachment?.downloadIdentifier)
            #expect(try await eventually { (second.firstProgressTotal ?? 0) > 0 })
            // The late joiner's first chunk is the catch-up: everything the download had when it joined.
            #expect((second.firstProgressTotal ?? 0) >= (first.firstProgressTotal ?? .max))
            first.attachment?.cancel()
            #expect(await first.outcome().isCancelled)
            // The first did not own the last share of the download, so it takes no partial with it.
            #expect(await first.outcome().partial == nil)
            let result = try #require(await second.outcome().result)
            #expect(isSameBytes(result.data, h.image))
            #expect(h.server.requestLog.count == 1 && h.coordinator.sharedLoadCount == 1)
        }
    }

    @Test("Scenario 29: no sharing across pipelines, across hydration keys, or with a hydration that has no key", arguments: CoordinatorDownloader.allCases)
    func noSharing(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            h.server.setShaping(OriginShaping(bytesPerSecond: 400_000), for: "/a.jpg")
            var keyed = h.request()
            keyed.hydration = { $0 }
            keyed.hydrationKey = "k1"
            var otherKey = keyed
            otherKey.hydrationKey = "k2"
            var unkeyed = h.request()
            unkeyed.hydration = { $0 }
            let loads = [h.load(h.request()), h.load(h.request(pipeline: "q")), h.load(keyed), h.load(keyed),
                         h.load(otherKey), h.load(unkeyed), h.load(unkeyed)]
            for load in loads { #expect(isSameBytes(await load.outcome().result?.data, h.image)) }
            // Only the two `keyed` loads share; every other load makes its own request.
            #expect(h.server.requestLog.count == 6)
        }
    }

    @Test("Scenario 30: a shared download runs at the highest priority of its fetches, recomputed as they change", arguments: CoordinatorDownloader.allCases)
    func sharedPriority(kind: CoordinatorDownloader) async throws {
        let recording = PriorityRecordingDownloader.Log()
        let wrap = { (base: any ImageDownloader) -> any ImageDownloader in PriorityRecordingDownloader(base: base, log: recording) }
        try await CoordinatorHarness.run(kind, wrap: wrap) { (h: CoordinatorHarness) async throws in
            h.server.setShaping(OriginShaping(bytesPerSecond: 50_000), for: "/a.jpg")
            let low = h.load(h.request(), priority: .low)
            #expect(try await eventually { recording.started.withLock { $0 } == [.low] })
            let high = h.load(h.request(), priority: .high)
            #expect(try await eventually { recording.changes.withLock { $0 }.last == .high })
            high.attachment?.priority = .veryHigh
            #expect(try await eventually { recording.changes.withLock { $0 }.last == .veryHigh })
            high.attachment?.cancel()
            #expect(try await eventually { recording.changes.withLock { $0 }.last == .low })
            #expect(isSameBytes(await low.outcome().result?.data, h.image))
            #expect(h.server.requestLog.count == 1)
        }
    }

    @Test("Scenario 31: with one download at a time, B starts after A; waiting downloads start highest priority first", arguments: CoordinatorDownloader.allCases)
    func concurrencyLimit(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            h.coordinator.maxConcurrentDownloads = 1
            for path in ["/b.jpg", "/c.jpg", "/d.jpg"] { h.server.setAsset(h.image, at: path, contentType: "image/jpeg") }
            h.server.setShaping(OriginShaping(bytesPerSecond: 50_000), for: "/a.jpg")
            let a = h.load(h.request("/a.jpg"))
            #expect(try await eventually { h.server.requestLog.count == 1 })
            let low = h.load(h.request("/b.jpg"), priority: .low)
            let normal = h.load(h.request("/c.jpg"), priority: .normal)
            let high = h.load(h.request("/d.jpg"), priority: .low)
            high.attachment?.priority = .veryHigh   // raised while waiting: moves ahead
            for load in [a, low, normal, high] { #expect(await load.outcome().result != nil) }
            let log = h.server.requestLog
            #expect(log.map(\.path) == ["/a.jpg", "/d.jpg", "/c.jpg", "/b.jpg"])
            // Never two at once: each request arrived after the previous one completed.
            for (previous, next) in zip(log, log.dropFirst()) {
                #expect(previous.completedAt.map { $0 <= next.receivedAt } == true)
            }
        }
    }

    @Test("A download waiting for a slot is dropped when its only fetch leaves; with no slots nothing starts", arguments: CoordinatorDownloader.allCases)
    func cancelWhileWaiting(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            h.coordinator.maxConcurrentDownloads = 0
            let waiting = h.load(h.request())
            try await Task.sleep(for: .milliseconds(100))
            #expect(h.server.requestLog.isEmpty && h.coordinator.activeDownloadCount == 1)
            waiting.attachment?.cancel()
            #expect(await waiting.outcome().isCancelled)
            #expect(h.coordinator.activeDownloadCount == 0)
            h.coordinator.maxConcurrentDownloads = -1
            #expect(isSameBytes(await h.load(h.request()).outcome().result?.data, h.image))
            #expect(h.server.requestLog.count == 1)
        }
    }

    @Test("Scenario 21: cancelled halfway over a shaped link, resumed with Range and If-Range: only the rest crosses the wire", arguments: CoordinatorDownloader.allCases)
    func resume(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            h.server.stallNextResponse(to: "/a.jpg", afterBytes: h.image.count * 6 / 10)
            let first = h.load(h.request(), cancelAfterBytes: h.image.count / 2)
            let partial = try #require(await first.outcome().partial)
            #expect(await first.outcome().isCancelled)
            #expect(partial.data == h.image.prefix(partial.data.count) && partial.data.count >= h.image.count / 2)
            #expect(partial.expectedByteCount == h.image.count)
            #expect(partial.entityTag == h.server.etag(at: "/a.jpg") && partial.lastModified != nil)
            #expect(try await eventually { h.server.requestLog.first?.clientWentAway == true },
                    "\(h.server.requestLog.map { ($0.status, $0.bytesSent, $0.isComplete, $0.clientWentAway) })")

            let second = h.load(h.request(partial: partial))
            let result = try #require(await second.outcome().result)
            #expect(result.data == h.image && result.wasResumed)
            #expect(second.responses.first?.status == 206 && second.responses.first?.resumed == partial.data.count)
            #expect((second.firstProgressTotal ?? 0) > partial.data.count)   // progress never restarts from 0
            try await h.server.waitForCompletedRequests(count: 2)
            let resumed = try #require(h.server.requestLog.last)
            #expect(resumed.range == "bytes=\(partial.data.count)-")
            #expect(resumed.ifRange == h.server.etag(at: "/a.jpg"))   // a strong ETag, which TIP never used
            #expect(resumed.bytesSent == h.image.count - partial.data.count)
        }
    }

    @Test("Resume with Last-Modified alone (TIP's validator) is honoured too", arguments: CoordinatorDownloader.allCases)
    func resumeWithLastModified(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            let lastModified = "Mon, 01 Jan 2024 00:00:00 GMT"
            let partial = PartialImageData(data: h.image.prefix(40_000), url: h.server.url(for: "/a.jpg"), dimensions: nil,
                                           expectedByteCount: h.image.count, lastModified: lastModified)
            let recorder = h.load(h.request(partial: partial))
            #expect(isSameBytes(await recorder.outcome().result?.data, h.image))
            #expect(await recorder.outcome().result?.wasResumed == true)
            try await h.server.waitForCompletedRequests(count: 1)
            #expect(h.server.requestLog.last?.ifRange == lastModified && h.server.requestLog.last?.bytesSent == h.image.count - 40_000)
        }
    }

    @Test("Scenario 23: a server that ignores Range sends 200: the partial is dropped and the whole image loads", arguments: CoordinatorDownloader.allCases)
    func resumeIgnored(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            h.server.setFaults([.ignoreRange], for: "/a.jpg")
            let partial = PartialImageData(data: h.image.prefix(30_000), url: h.server.url(for: "/a.jpg"), dimensions: nil,
                                           expectedByteCount: h.image.count, entityTag: h.server.etag(at: "/a.jpg"))
            let recorder = h.load(h.request(partial: partial))
            let result = try #require(await recorder.outcome().result)
            #expect(result.data == h.image && !result.wasResumed)
            #expect(recorder.responses.first?.status == 200 && recorder.responses.first?.resumed == 0)
            // Progress restarted: the first total counts the first bytes delivered, not the partial's as well.
            #expect(recorder.firstProgressTotal != nil && recorder.firstProgressTotal == recorder.firstChunkCount)
        }
    }

    @Test("Scenario 24: a 416 to the ranged request is retried once without Range and succeeds", arguments: CoordinatorDownloader.allCases)
    func rangeNotSatisfiable(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            // A partial longer than the file: the server cannot satisfy bytes=N-.
            var stale = h.image
            stale.append(Data(repeating: 0, count: 10))
            let partial = PartialImageData(data: stale, url: h.server.url(for: "/a.jpg"), dimensions: nil,
                                           expectedByteCount: stale.count + 10, entityTag: h.server.etag(at: "/a.jpg"))
            let recorder = h.load(h.request(partial: partial))
            let result = try #require(await recorder.outcome().result)
            #expect(result.data == h.image && !result.wasResumed)
            let log = h.server.requestLog
            #expect(log.map(\.status) == [416, 200])
            #expect(log.last?.range == nil && log.last?.ifRange == nil)
            #expect(recorder.responses.map(\.status) == [200])   // the fetch never saw the 416
        }
    }

    @Test("Scenario 25: without validators a cancelled download keeps no partial", arguments: CoordinatorDownloader.allCases)
    func noValidatorsNoPartial(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            h.server.setShaping(OriginShaping(bytesPerSecond: 40_000), for: "/a.jpg")
            // Each response stalls at 60%, so the cancel lands mid-body however late the client hears of the bytes.
            let stall = OriginFault.stallAfterBytes(h.image.count * 6 / 10)
            h.server.setFaults([.noValidators, stall], for: "/a.jpg")
            let recorder = h.load(h.request(), cancelAfterBytes: h.image.count / 2)
            #expect(await recorder.outcome().isCancelled)
            #expect(await recorder.outcome().partial == nil)
            h.server.setFaults([.noAcceptRanges, stall], for: "/a.jpg")
            let again = h.load(h.request(), cancelAfterBytes: h.image.count / 2)
            #expect(await again.outcome().partial == nil)
        }
    }

    @Test("A download cut off by the server keeps a partial that the next load resumes", arguments: CoordinatorDownloader.allCases)
    func cutOffThenResume(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            h.server.setFaults([.closeAfterBytes(50_000)], for: "/a.jpg", count: 1)
            let first = h.load(h.request())
            let outcome = await first.outcome()
            guard case .failure(.download, let partial?) = outcome else {
                Issue.record("expected a transport failure with a partial, got \(outcome) after \(first.totals.last ?? 0) bytes, responses \(first.responses.map(\.status))")
                return
            }
            #expect(partial.data == h.image.prefix(50_000))
            let second = h.load(h.request(partial: partial))
            #expect(isSameBytes(await second.outcome().result?.data, h.image))
            #expect(h.server.requestLog.last?.range == "bytes=50000-")
        }
    }

    @Test("The coordinator hydrates and authorizes before sending: a header added reaches the server; a changed URL, a throwing hydration or a throwing authorization fail the load without a request", arguments: CoordinatorDownloader.allCases)
    func hydrationAndAuthorization(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            var hydrated = h.request()
            hydrated.hydration = { request in
                var request = request
                request.headers.add(name: "X-Foo", value: "1")
                return request
            }
            hydrated.authorization = { _ in "Bearer t" }
            #expect(isSameBytes(await h.load(hydrated).outcome().result?.data, h.image))
            #expect(h.server.requestLog.last?.header("X-Foo") == "1")
            #expect(h.server.requestLog.last?.authorization == "Bearer t")

            var moved = h.request()
            let elsewhere = h.server.url(for: "/elsewhere.jpg")
            moved.hydration = { request in
                var request = request
                request.url = elsewhere
                return request
            }
            let movedOutcome = await h.load(moved).outcome()
            guard case .failure(.illegalHydrationModification, _) = movedOutcome else {
                Issue.record("expected illegalHydrationModification, got \(movedOutcome)")
                return
            }
            struct Refused: Error {}
            var refusing = h.request()
            refusing.hydration = { _ in throw Refused() }
            guard case .failure(.hydration(let error), _) = await h.load(refusing).outcome(), error is Refused else {
                Issue.record("expected the hydration's own error")
                return
            }
            var unauthorized = h.request()
            unauthorized.authorization = { _ in throw Refused() }
            guard case .failure(.authorization, _) = await h.load(unauthorized).outcome() else {
                Issue.record("expected an authorization failure")
                return
            }
            #expect(h.server.requestLog.count == 1)   // none of the failed ones reached the server
        }
    }

    @Test("Scenario 34: a 404 fails with its status and no bytes", arguments: CoordinatorDownloader.allCases)
    func notFound(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            let recorder = h.load(h.request("/missing.jpg"))
            guard case .failure(.httpStatus(404), nil) = await recorder.outcome() else {
                Issue.record("expected httpStatus(404)")
                return
            }
            #expect(recorder.totals.isEmpty)
        }
    }

    @Test("Scenario 36: every byte then a transport error is a success, reported as a problem", arguments: CoordinatorDownloader.allCases)
    func unnecessaryError(kind: CoordinatorDownloader) async throws {
        let wrap = { (base: any ImageDownloader) -> any ImageDownloader in FailingAtEndDownloader(base: base) }
        try await CoordinatorHarness.run(kind, wrap: wrap) { (h: CoordinatorHarness) async throws in
            let result = try #require(await h.load(h.request()).outcome().result)
            #expect(result.data == h.image && result.unnecessaryError == .idleTimedOut)
            #expect(h.problems.all.contains {
                if case .imageDownloadedWithUnnecessaryError(_, .idleTimedOut) = $0 { true } else { false }
            })
        }
    }

    @Test("The last fetch leaving cancels the download: the server sees the client go away", arguments: CoordinatorDownloader.allCases)
    func lastLeaves(kind: CoordinatorDownloader) async throws {
        try await CoordinatorHarness.run(kind) { (h: CoordinatorHarness) async throws in
            // Slow enough that the body is still being sent when the cancel reaches the transport, even on a
            // machine busy with the other tests (at 40 KB/s it sometimes was not).
            h.server.setShaping(OriginShaping(bytesPerSecond: 8_000), for: "/a.jpg")
            let a = h.load(h.request()), b = h.load(h.request())
            #expect(try await eventually { (a.firstProgressTotal ?? 0) > 0 })
            a.attachment?.cancel()
            b.attachment?.cancel()
            let (first, last) = (await a.outcome(), await b.outcome())
            #expect(first.isCancelled && last.isCancelled, "\(first) / \(last)")
            #expect(first.partial == nil && last.partial != nil)   // the last one out takes the partial
            #expect(try await eventually { h.server.requestLog.first?.clientWentAway == true })
            #expect(h.coordinator.activeDownloadCount == 0)
        }
    }
}
