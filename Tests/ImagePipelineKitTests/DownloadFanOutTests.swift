import Foundation
import PipelineLocking
import Testing
import TestSupport
@testable import ImagePipelineKit

@Suite("Download fan-out: the fetches that joined a download take a burst's shares together, in place")
struct DownloadFanOutTests {
    /// A serial queue that a block can tell it runs on.
    private final class MarkedQueue: Sendable {
        let queue: DispatchQueue
        let key = DispatchSpecificKey<Int>()
        let mark: Int

        init(_ mark: Int) {
            self.mark = mark
            queue = DispatchQueue(label: "DownloadFanOutTests.\(mark)")
            queue.setSpecific(key: key, value: mark)
        }

        var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == mark }
    }

    /// Each drain's events, and whether it ran on its queue.
    private final class DrainLog: Sendable {
        let runs = Locked<[(events: [Int], onQueue: Bool)]>([])
    }

    /// A backlog onto one queue, and what it drained.
    private struct Drains: Sendable {
        let log = DrainLog()
        let backlog: QueueBacklog<Int>

        init(_ marked: MarkedQueue) {
            let log = self.log
            backlog = QueueBacklog(queue: marked.queue) { events in
                log.runs.withLock { $0.append((events, marked.isCurrent)) }
            }
        }

        var events: [Int] { log.runs.withLock { $0.flatMap(\.events) } }
        var allOnQueue: Bool { log.runs.withLock { $0.allSatisfy(\.onQueue) } }
    }

    @Test("The joined queues' shares wait for the turn to end, then each runs on its own queue, events in order")
    func sharesRunAfterTheTurnOnTheirQueues() async throws {
        let home = MarkedQueue(0)
        let joined = (1...3).map(MarkedQueue.init)
        let homeDrains = Drains(home)
        let joinedDrains = joined.map(Drains.init)
        let runQueue = DispatchQueue(label: "DownloadFanOutTests.run")
        let ranBeforeRun = Locked(false)
        // Two bursts, as the relay takes them: each turn adds its events, then runs its fan-out.
        for burst in 0..<2 {
            home.queue.sync {
                let fanOut = DownloadFanOut(homeQueue: home.queue) { runQueue }
                for event in [burst * 10, burst * 10 + 1] {
                    homeDrains.backlog.add(event, fanOut: fanOut)
                    joinedDrains.forEach { $0.backlog.add(event, fanOut: fanOut) }
                }
                // Nothing of the joined queues runs while the turn is on.
                Thread.sleep(forTimeInterval: 0.01)
                if joinedDrains.contains(where: { $0.events.count != burst * 2 }) { ranBeforeRun.withLock { $0 = true } }
                fanOut.run()
            }
            #expect(try await eventually { (joinedDrains + [homeDrains]).allSatisfy { $0.events.count == burst * 2 + 2 } })
        }
        #expect(!ranBeforeRun.withLock { $0 })
        for drains in joinedDrains + [homeDrains] {
            #expect(drains.events == [0, 1, 10, 11])
            #expect(drains.allOnQueue)
        }
    }

    @Test("A burst that only the home queue takes makes no queue to run shares on")
    func homeOnlyBurstMakesNoRunQueue() async throws {
        let home = MarkedQueue(0)
        let homeDrains = Drains(home)
        let madeRunQueue = Locked(false)
        home.queue.sync {
            let fanOut = DownloadFanOut(homeQueue: home.queue) {
                madeRunQueue.withLock { $0 = true }
                return DispatchQueue(label: "DownloadFanOutTests.unused")
            }
            homeDrains.backlog.add(1, fanOut: fanOut)
            fanOut.run()
        }
        #expect(try await eventually { homeDrains.events == [1] })
        #expect(homeDrains.allOnQueue)
        #expect(!madeRunQueue.withLock { $0 })
    }
}
