import Dispatch
import PipelineLocking
import Testing
import TestSupport
@testable import ImagePipelineKit

@Suite("Deadline timer: every download's deadlines on one timer")
struct DeadlineTimerTests {
    @Test("Deadlines fire once each, earliest first, and a cancelled one never does")
    func firesInOrder() async throws {
        let timer = DeadlineTimer()
        let fired = Locked<[String]>([])
        let allFired = DispatchSemaphore(value: 0)
        func record(_ name: String) -> @Sendable () -> Void {
            { fired.withLock { $0.append(name) }; allFired.signal() }
        }
        timer.schedule(after: .milliseconds(300), record("third"))
        timer.schedule(after: .milliseconds(100), record("first"))
        let cancelled = timer.schedule(after: .milliseconds(150), record("cancelled"))
        timer.schedule(after: .milliseconds(200), record("second"))
        timer.cancel(cancelled)
        let signals = try await offloaded { (0..<3).map { _ in allFired.wait(timeout: .now() + 10) == .success } }
        #expect(signals == [true, true, true])
        // Long enough for the cancelled one to have fired too, had it not been taken out.
        try await Task.sleep(for: .milliseconds(300))
        #expect(fired.withLock { $0 } == ["first", "second", "third"])
        #expect(timer.scheduledCount == 0)
    }

    @Test("A deadline earlier than the one the timer is set for sets it again")
    func earlierDeadlineResetsTheTimer() async throws {
        let timer = DeadlineTimer()
        let late = timer.schedule(after: .seconds(60)) {}
        let early = DispatchSemaphore(value: 0)
        timer.schedule(after: .milliseconds(50)) { early.signal() }
        // Had the timer stayed set for the first deadline, this would wait a minute: it fails after ten seconds.
        let firedEarly = try await offloaded { early.wait(timeout: .now() + 10) == .success }
        #expect(firedEarly)
        #expect(timer.scheduledCount == 1)
        timer.cancel(late)
        #expect(timer.scheduledCount == 0)
    }
}
