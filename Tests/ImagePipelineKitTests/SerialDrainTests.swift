import Foundation
import Testing
import PipelineLocking
import TestSupport
@testable import ImagePipelineKit

/// The download coordinator's queue: serial and in order, run by a reporting thread only while nobody else runs
/// it, never inside a caller of `async`, and `sync` in turn with the blocks.
@Suite("The coordinator's serial drain")
struct SerialDrainTests {
    static func currentThread() -> UInt { UInt(bitPattern: Int(pthread_self())) }

    @Test("A reporting thread runs the block itself while nobody drains; async never runs it inside the caller")
    func whoRunsTheBlock() async throws {
        let drain = SerialDrain(label: "test")
        let ranOn = Locked<[String: UInt]>([:])
        let caller = Self.currentThread()
        drain.runIfIdle { ranOn.withLock { $0["runIfIdle"] = Self.currentThread() } }
        #expect(ranOn.withLock { $0["runIfIdle"] } == caller)
        drain.async { ranOn.withLock { $0["async"] = Self.currentThread() } }
        _ = try await eventually { ranOn.withLock { $0["async"] } != nil }
        #expect(ranOn.withLock { $0["async"] } != caller)
    }

    @Test("While another thread drains, a reporting thread only adds its block, and the drainer runs it in order")
    func busyDrainTakesTheBlock() async throws {
        let drain = SerialDrain(label: "test")
        let order = Locked<[Int]>([])
        let release = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        drain.async {
            started.signal()
            release.wait()
            order.withLock { $0.append(1) }
        }
        started.wait()
        let caller = Self.currentThread()
        let ranOn = Locked<UInt?>(nil)
        drain.runIfIdle {
            ranOn.withLock { $0 = Self.currentThread() }
            order.withLock { $0.append(2) }
        }
        #expect(order.withLock { $0 }.isEmpty)   // it returned without running or waiting
        release.signal()
        _ = try await eventually { order.withLock { $0.count } == 2 }
        #expect(order.withLock { $0 } == [1, 2])
        #expect(ranOn.withLock { $0 } != caller)
    }

    @Test("sync runs after the blocks added before it, inline when called from a block, and blocks it adds run after it")
    func syncTakesItsTurn() async throws {
        let drain = SerialDrain(label: "test")
        let order = Locked<[String]>([])
        let release = DispatchSemaphore(value: 0)
        drain.async {
            release.wait()
            order.withLock { $0.append("first") }
            let nested = drain.sync { () -> Int in
                order.withLock { $0.append("nested sync") }
                return 7
            }
            #expect(nested == 7)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { release.signal() }
        let value = drain.sync { () -> Int in
            order.withLock { $0.append("sync") }
            drain.async { order.withLock { $0.append("added by sync") } }
            return 42
        }
        #expect(value == 42)
        _ = try await eventually { order.withLock { $0.count } == 4 }
        #expect(order.withLock { $0 } == ["first", "nested sync", "sync", "added by sync"])
    }

    @Test("Blocks from many threads run one at a time, each thread's in its order")
    func manyThreads() async throws {
        let drain = SerialDrain(label: "test")
        let running = Locked(0)
        let overlapped = Locked(false)
        let seen = Locked<[Int: [Int]]>([:])
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for index in 0..<500 {
                let block: @Sendable () -> Void = {
                    if running.withLock({ count -> Int in count += 1; return count }) > 1 { overlapped.withLock { $0 = true } }
                    seen.withLock { $0[thread, default: []].append(index) }
                    running.withLock { $0 -= 1 }
                }
                switch index % 3 {
                case 0: drain.runIfIdle(block)
                case 1: drain.async(block)
                default: drain.sync { block() }
                }
            }
        }
        _ = try await eventually { seen.withLock { $0.values.map(\.count).reduce(0, +) } == 8 * 500 }
        #expect(!overlapped.withLock { $0 })
        for thread in 0..<8 { #expect(seen.withLock { $0[thread] } == Array(0..<500)) }
    }
}
