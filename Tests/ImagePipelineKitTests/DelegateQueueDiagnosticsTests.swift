import Foundation
import Testing
import TestSupport
@testable import ImagePipelineKit

/// `measuresWork` is process-wide: these tests turn it on and off, so they run one at a time.
@Suite("Delegate queue diagnostics: CPU time of the pipeline's turns on a delegate queue", .serialized)
struct DelegateQueueDiagnosticsTests {
    let configuration = GlobalConfiguration()
    let queue = DispatchQueue(label: "diagnostics-tests.delegate")
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-diagnostics-\(UUID().uuidString)")

    init() {
        configuration.delegateQueue = queue
    }

    /// Stores an image whose completion (on the delegate queue) runs `callback`; returns the queue's measured
    /// work before and after.
    func storeMeasuring(_ callback: @escaping @Sendable () -> Void) async throws -> (Duration, Duration) {
        let pipeline = try ImagePipeline(identifier: "diagnostics" + String(UUID().uuidString.prefix(8)),
                                         configuration: configuration, cacheRoot: root)
        defer { try? FileManager.default.removeItem(at: root) }
        let before = DelegateQueueDiagnostics.workTime(on: queue)
        let data = try StoreOperationTests.jpeg()
        await withCheckedContinuation { continuation in
            pipeline.store(StoreRequest(url: URL(string: "http://t/d")!, identifier: "D", source: .data(data))) { _, _, _ in
                callback()
                continuation.resume()
            }
        }
        // The turn is tallied as the completion returns, on the delegate queue: one more block there waits for it.
        queue.sync {}
        return (before, DelegateQueueDiagnostics.workTime(on: queue))
    }

    /// Spins until the calling thread has used `duration` of CPU.
    static func burnCPU(_ duration: Duration) {
        var start = timespec(), now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start)
        repeat { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) }
        while Duration.seconds(now.tv_sec - start.tv_sec) + .nanoseconds(now.tv_nsec - start.tv_nsec) < duration
    }

    @Test("A callback's CPU time is counted; its waiting is not")
    func countsCPUNotWaiting() async throws {
        DelegateQueueDiagnostics.measuresWork = true
        defer { DelegateQueueDiagnostics.measuresWork = false }
        let (before, after) = try await storeMeasuring { Self.burnCPU(.milliseconds(5)) }
        #expect(after - before >= .milliseconds(5), "\(after - before)")

        let (beforeSleep, afterSleep) = try await storeMeasuring { usleep(50_000) }
        #expect(afterSleep - beforeSleep < .milliseconds(25), "\(afterSleep - beforeSleep)")
    }

    @Test("Nothing is measured while measuring is off")
    func offByDefault() async throws {
        #expect(!DelegateQueueDiagnostics.measuresWork)
        let (before, after) = try await storeMeasuring { Self.burnCPU(.milliseconds(5)) }
        #expect(after == before)
    }
}
