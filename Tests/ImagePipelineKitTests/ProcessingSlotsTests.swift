import Dispatch
import Foundation
import PipelineLocking
import Testing
import TestSupport
@testable import ImagePipelineKit

@Suite("Processing slots: no more CPU-heavy work at once than there are slots, threads and tasks in one line")
struct ProcessingSlotsTests {
    /// Counts the bodies running at once and the most that ever did.
    final class Occupancy: Sendable {
        private let counts = Locked((now: 0, most: 0, finished: 0))

        func run() {
            counts.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
            usleep(2_000)
            counts.withLock { $0.now -= 1; $0.finished += 1 }
        }

        var most: Int { counts.withLock { $0.most } }
        var finished: Int { counts.withLock { $0.finished } }
    }

    @Test("Eight threads and eight tasks at once: never more than two in their bodies, and every one runs")
    func bounded() async throws {
        let slots = ProcessingSlots(count: 2)
        let occupancy = Occupancy()
        let threadsDone = DispatchGroup()
        for _ in 0..<8 {
            threadsDone.enter()
            Thread {
                slots.withSlot { occupancy.run() }
                threadsDone.leave()
            }.start()
        }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { await slots.withSlot { occupancy.run() } } }
        }
        #expect(threadsDone.wait(timeout: .now() + 10) == .success)
        #expect(occupancy.finished == 16)
        #expect(occupancy.most <= 2)
        #expect(slots.waitingCount == 0)
    }

    @Test("A freed slot goes to the first in line, a thread or a task")
    func firstInLine() async throws {
        let slots = ProcessingSlots(count: 1)
        let order = Recorded<String>()
        let (held, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        Thread { slots.withSlot { held.signal(); release.wait() } }.start()
        #expect(held.wait(timeout: .now() + 10) == .success)

        let done = DispatchGroup()
        func waitingThread(_ name: String) {
            done.enter()
            Thread {
                slots.withSlot { order.append(name) }
                done.leave()
            }.start()
        }
        waitingThread("thread A")
        #expect(try await eventually { slots.waitingCount == 1 })
        let task = Task { await slots.withSlot { order.append("task B") } }
        #expect(try await eventually { slots.waitingCount == 2 })
        waitingThread("thread C")
        #expect(try await eventually { slots.waitingCount == 3 })

        release.signal()
        await task.value
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(order.all == ["thread A", "task B", "thread C"])
    }

    struct Failure: Error {}

    /// The blocking variant, from a context that is not async.
    private static func throwInSlot(_ slots: ProcessingSlots) throws {
        try slots.withSlot { throw Failure() }
    }

    @Test("A slot taken by a throwing body is given back")
    func throwingBody() async throws {
        let slots = ProcessingSlots(count: 1)
        #expect(throws: Failure.self) { try Self.throwInSlot(slots) }
        await #expect(throws: Failure.self) { try await slots.withSlot { throw Failure() } }
        let reached = Recorded<Bool>()
        Task { await slots.withSlot { reached.append(true) } }
        #expect(try await eventually { reached.count == 1 }, "the one slot is free again")
    }

    @Test("A fetch's decode waits for the configuration's slot, and finishes once it is free")
    func fetchDecodeTakesASlot() async throws {
        let configuration = GlobalConfiguration()
        #expect(configuration.processingSlots == nil)
        let slots = ProcessingSlots(count: 1)
        configuration.processingSlots = slots
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-slots-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let (pipeline, url) = try FetchQueueTargetTests.pipelineWithCachedJPEG(on: configuration, root: root)

        let (held, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        Thread { slots.withSlot { held.signal(); release.wait() } }.start()
        #expect(held.wait(timeout: .now() + 10) == .success)
        let fetch = Task {
            try await pipeline.image(for: GenericFetchRequest(url: url, loadingSources: [.memoryCache]))
        }
        #expect(try await eventually { slots.waitingCount == 1 }, "the decode waits in the slots' line")
        release.signal()
        let result = try await fetch.value
        #expect(result.source == .memoryCache && result.image.dimensions == PixelSize(width: 40, height: 30))
        #expect(slots.waitingCount == 0)
    }
}
