import Dispatch
import Foundation
import PipelineLocking
import Testing
@testable import ImagePipelineKit

/// The decode the table runs: counts its calls, and holds the first until the test lets it go, so that other
/// callers provably arrive while it runs.
private final class GatedDecoder: Sendable {
    let calls = Locked(0)
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let gateFirst: Bool

    init(gateFirst: Bool = true) { self.gateFirst = gateFirst }

    func decode(_ data: Data) throws -> DecodedImage {
        let call = calls.withLock { count -> Int in
            count += 1
            return count
        }
        if call == 1, gateFirst {
            started.signal()
            release.wait()
        }
        return try CodecCatalogue.shared.decode(data)
    }
}

/// Where another thread leaves an outcome.
private final class OutcomeSlot: Sendable {
    private let outcome = Locked<SharedDecodes.Outcome?>(nil)
    let filled = DispatchSemaphore(value: 0)

    func fill(_ value: SharedDecodes.Outcome?) {
        outcome.withLock { $0 = value }
        filled.signal()
    }

    var value: SharedDecodes.Outcome? { outcome.withLock { $0 } }

    /// Waits up to 10 s for `fill`.
    func wait() -> Bool { filled.wait(timeout: .now() + 10) == .success }
}

@Suite("SharedDecodes: one decode for fetches of the same bytes at the same target (a hundred fetches, one decode)")
struct SharedDecodesTests {
    private let png: Data

    init() throws {
        let bitmap = try Bitmap(width: 8, height: 4) { pixels, stride in memset(pixels, 0x40, stride * 4) }
        png = try PNGEncoder().encode(ImageContainer(bitmap: bitmap), options: [], quality: 1)
    }

    private func key(_ data: Data, target: Int? = nil) -> SharedDecodes.Key {
        SharedDecodes.Key(identifier: "I", target: TargetSizing(dimensions: target.map { PixelSize(width: $0, height: $0) }),
                          configuration: DecoderConfiguration(), byteCount: data.count)
    }

    /// Starts a gated decode of `data` on another thread; returns once it is inside the decode.
    private func startOwner(_ table: SharedDecodes, _ decoder: GatedDecoder, _ data: Data, key: SharedDecodes.Key,
                            result: OutcomeSlot) {
        Thread.detachNewThread {
            let own = table.decode(data, key: key, using: { try decoder.decode(data) }) { _, _ in
                Issue.record("the first caller joined instead of decoding")
            }
            result.fill(own)
        }
        decoder.started.wait()
    }

    @Test("A caller that comes while a decode of equal bytes runs waits for it and gets the same image; only one decode ran")
    func joinsRunningDecode() throws {
        let table = SharedDecodes(), decoder = GatedDecoder()
        let owner = OutcomeSlot()
        startOwner(table, decoder, png, key: key(png), result: owner)

        let joined = OutcomeSlot()
        let copy = Data(Array(png))   // equal bytes, other storage
        let own = table.decode(copy, key: key(copy), using: { try decoder.decode(copy) }) { outcome, _ in joined.fill(outcome) }
        #expect(own == nil)
        decoder.release.signal()
        #expect(joined.wait() && owner.wait())
        let image = try #require(try joined.value?.get())
        #expect(image.properties.dimensions == PixelSize(width: 8, height: 4))
        let ownerImage = try #require(try owner.value?.get())
        #expect(ownerImage.container.frames[0].bitmap === image.container.frames[0].bitmap)
        #expect(decoder.calls.withLock { $0 } == 1)
    }

    @Test("Other bytes under the same key, or another target, decode on their own while the first runs")
    func differentBytesOrTargetDecodeAlone() throws {
        let table = SharedDecodes(), decoder = GatedDecoder()
        let owner = OutcomeSlot()
        startOwner(table, decoder, png, key: key(png), result: owner)

        var other = png
        other[other.count - 5] ^= 0xFF   // same length, other bytes (the CRC no longer matches: a decode error)
        let differentBytes = table.decode(other, key: key(other), using: { try decoder.decode(other) }) { _, _ in
            Issue.record("joined a decode of other bytes")
        }
        #expect(differentBytes != nil)
        let otherTarget = table.decode(png, key: key(png, target: 2), using: { try decoder.decode(png) }) { _, _ in
            Issue.record("joined a decode at another target")
        }
        #expect((try otherTarget?.get()) != nil)
        decoder.release.signal()
        #expect(owner.wait())
        #expect(decoder.calls.withLock { $0 } == 3)
    }

    @Test("A decode's failure reaches the callers that joined it; a call after the decode ended decodes again")
    func failureIsSharedAndNothingIsKept() throws {
        let table = SharedDecodes(), decoder = GatedDecoder()
        let broken = Data(png.prefix(20))
        let owner = OutcomeSlot()
        startOwner(table, decoder, broken, key: key(broken), result: owner)
        let joined = OutcomeSlot()
        #expect(table.decode(broken, key: key(broken), using: { try decoder.decode(broken) }) { outcome, _ in joined.fill(outcome) } == nil)
        decoder.release.signal()
        #expect(joined.wait() && owner.wait())
        #expect(throws: ImageCodecError.self) { try joined.value?.get() }

        let later = table.decode(png, key: key(png), using: { try decoder.decode(png) }) { _, _ in Issue.record("nothing runs") }
        #expect((try later?.get()) != nil)
        #expect(decoder.calls.withLock { $0 } == 2)
    }

    @Test("A held image goes to callers of equal bytes after the decode ended, until its decoder releases it")
    func heldUntilReleased() throws {
        let table = SharedDecodes(), decoder = GatedDecoder(gateFirst: false)
        let hold = SharedDecodes.Hold(key(png))
        let own = table.decode(png, key: key(png), holding: hold, using: { try decoder.decode(png) }) { _, _ in
            Issue.record("the first caller joined")
        }
        let image = try #require(try own?.get())
        // Equal bytes in other storage take the held image: no second decode.
        let late = table.decode(Data(Array(png)), key: key(png), using: { try decoder.decode(png) }) { _, _ in
            Issue.record("a late caller waited")
        }
        #expect(try late?.get().container.frames[0].bitmap === image.container.frames[0].bitmap)
        #expect(decoder.calls.withLock { $0 } == 1)
        // Once released, a caller decodes again.
        table.release(hold)
        let afterRelease = table.decode(png, key: key(png), using: { try decoder.decode(png) }) { _, _ in Issue.record("joined") }
        #expect((try afterRelease?.get()) != nil)
        #expect(decoder.calls.withLock { $0 } == 2)
    }

    @Test("A late caller that took the held image and releases its own hold leaves the image held for the next")
    func lateCallersReleaseKeepsTheHold() throws {
        let table = SharedDecodes(), decoder = GatedDecoder(gateFirst: false)
        let decodersHold = SharedDecodes.Hold(key(png))
        _ = table.decode(png, key: key(png), holding: decodersHold, using: { try decoder.decode(png) }) { _, _ in
            Issue.record("the first caller joined")
        }
        // A fetch asks every decode to hold its image, and releases that hold once done, whether or not it decoded.
        let lateHold = SharedDecodes.Hold(key(png))
        let late = table.decode(png, key: key(png), holding: lateHold, using: { try decoder.decode(png) }) { _, _ in
            Issue.record("a late caller waited")
        }
        #expect((try late?.get()) != nil)
        table.release(lateHold)
        let third = table.decode(png, key: key(png), using: { try decoder.decode(png) }) { _, _ in Issue.record("joined") }
        #expect((try third?.get()) != nil)
        #expect(decoder.calls.withLock { $0 } == 1)
        table.release(decodersHold)
        _ = table.decode(png, key: key(png), using: { try decoder.decode(png) }) { _, _ in Issue.record("joined") }
        #expect(decoder.calls.withLock { $0 } == 2)
    }

    @Test("A caller that takes a held image sends its delegate work with the decoding caller's turn, and work added after that turn went out still goes")
    func heldImageSharesTheDecodersTurn() throws {
        let table = SharedDecodes(), decoder = GatedDecoder(gateFirst: false)
        let decodersTurn = SharedDelegateTurn(), lateTurn = SharedDelegateTurn()
        _ = table.decode(png, key: key(png), holding: SharedDecodes.Hold(key(png)), using: { try decoder.decode(png) },
                         sharing: decodersTurn) { _, _ in Issue.record("the first caller joined") }
        let late = table.decode(Data(Array(png)), key: key(png), using: { try decoder.decode(png) },
                                sharing: lateTurn) { _, _ in Issue.record("a late caller waited") }
        #expect((try late?.get()) != nil)

        let queue = DispatchQueue(label: "delegate")
        let ran = Locked<[String]>([])
        decodersTurn.add { ran.withLock { $0.append("decoder") } }
        lateTurn.add { ran.withLock { $0.append("late") } }
        lateTurn.enqueue(on: queue)   // forwarded: nothing goes out on its own
        queue.sync {}
        #expect(ran.withLock { $0 }.isEmpty)
        decodersTurn.enqueue(on: queue)
        queue.sync {}
        #expect(ran.withLock { $0 } == ["decoder", "late"])
        lateTurn.add { ran.withLock { $0.append("after the turn went out") } }
        queue.sync {}
        #expect(ran.withLock { $0 } == ["decoder", "late", "after the turn went out"])
    }

    @Test("What a callback leaves for after the turn runs once the turn's last callback ran, forwarded turns' too; outside the turn's block it runs at once")
    func afterCallbacksWaitForTheTurnsEnd() {
        let turn = SharedDelegateTurn(), forwarded = SharedDelegateTurn()
        forwarded.forward(to: turn)
        let queue = DispatchQueue(label: "delegate")
        let ran = Locked<[String]>([])
        turn.add {
            ran.withLock { $0.append("first") }
            turn.afterCallbacks { ran.withLock { $0.append("after first") } }
        }
        forwarded.add {
            ran.withLock { $0.append("forwarded") }
            forwarded.afterCallbacks { ran.withLock { $0.append("after forwarded") } }
        }
        turn.add { ran.withLock { $0.append("last") } }
        turn.enqueue(on: queue)
        queue.sync {}
        #expect(ran.withLock { $0 } == ["first", "forwarded", "last", "after first", "after forwarded"])
        turn.afterCallbacks { ran.withLock { $0.append("outside") } }
        #expect(ran.withLock { $0.last } == "outside")
        // A callback added after the turn went out runs in a block of its own, and what it leaves runs right after.
        turn.add {
            ran.withLock { $0.append("late") }
            turn.afterCallbacks { ran.withLock { $0.append("after late") } }
        }
        queue.sync {}
        #expect(ran.withLock { Array($0.suffix(2)) } == ["late", "after late"])
    }
}
