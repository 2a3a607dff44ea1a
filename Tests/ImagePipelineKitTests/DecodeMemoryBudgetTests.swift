import Foundation
import PipelineLocking
import Testing
import TestSupport
@testable import ImagePipelineKit

/// The budget for the pixels of decodes in flight, with real decodes on real threads.
@Suite("Decode memory budget: concurrent decodes never hold more than the budget together")
struct DecodeMemoryBudgetTests {
    static let side = 3000
    static let perDecode = Bitmap.alignedBytesPerRow(forWidth: side) * side

    /// Decodes `data` on a thread of its own under a claim of `budget`, as a fetch does: a decode stopped for
    /// room waits to be told there may be some, then decodes again; the claim is given back after each decode.
    static func decode(_ data: Data, under budget: DecodeMemoryBudget) async throws -> DecodedImage {
        let deadline = DispatchTime.now() + DecodeMemoryBudget.maximumWait
        while true {
            let claim = budget.claim(stopsForRoom: true)
            do {
                return try await offloaded {
                    defer { claim.releaseAll() }
                    return try DecodeMemoryBudget.Claim.$current.withValue(claim) { try CodecCatalogue.shared.decode(data) }
                }
            } catch {
                guard let bytes = claim.stoppedForRoom else { throw error }
                let hasRoom = await withCheckedContinuation { continuation in
                    budget.whenRoom(for: bytes, until: deadline) { continuation.resume(returning: $0) }
                }
                guard hasRoom else { throw ImageCodecError.limitExceeded(.decodeMemoryBudget(bytes)) }
            }
        }
    }

    @Test("Eight concurrent decodes of files declaring 3000x3000 all succeed, never holding more than the budget")
    func boundedConcurrency() async throws {
        let budget = DecodeMemoryBudget(capacity: 2 * Self.perDecode + Self.perDecode / 2)
        let files = try (0..<8).map { try DecodeBomb.jpeg(side: Self.side, variant: $0) }
        let sizes = try await withThrowingTaskGroup(of: PixelSize.self) { group in
            for file in files {
                group.addTask { try await Self.decode(file, under: budget).properties.dimensions }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(sizes == Array(repeating: PixelSize(width: Self.side, height: Self.side), count: 8))
        #expect(budget.peakInUse <= budget.capacity)
        #expect(budget.peakInUse >= Self.perDecode)
        #expect(budget.inUse == 0)
    }

    @Test("A decode larger than the whole budget fails at once with its own limit, and holds nothing")
    func tooLargeForTheBudget() async throws {
        let budget = DecodeMemoryBudget(capacity: Self.perDecode / 2)
        let file = try DecodeBomb.jpeg(side: Self.side)
        await #expect(throws: ImageCodecError.limitExceeded(.decodeMemoryBudget(Self.perDecode))) {
            _ = try await Self.decode(file, under: budget)
        }
        #expect(budget.inUse == 0)
    }

    @Test("A decode that finds no room stops before it allocates; it is told once the memory is given back, or at its deadline")
    func stoppedDecodeIsToldOfRoom() async throws {
        let budget = DecodeMemoryBudget(capacity: Self.perDecode)
        let holder = budget.claim(stopsForRoom: true)
        try holder.grow(to: Self.perDecode)
        let file = try DecodeBomb.jpeg(side: Self.side)
        let stopped = budget.claim(stopsForRoom: true)
        #expect(throws: ImageCodecError.limitExceeded(.decodeMemoryBudget(Self.perDecode))) {
            _ = try DecodeMemoryBudget.Claim.$current.withValue(stopped) { try CodecCatalogue.shared.decode(file) }
        }
        #expect(stopped.stoppedForRoom == Self.perDecode && budget.inUse == Self.perDecode)

        let expired = await withCheckedContinuation { continuation in
            budget.whenRoom(for: Self.perDecode, until: .now() + .milliseconds(100)) { continuation.resume(returning: $0) }
        }
        #expect(!expired && budget.waitingCount == 0)

        let told = Locked<Bool?>(nil)
        budget.whenRoom(for: Self.perDecode, until: .now() + .seconds(30)) { hasRoom in told.withLock { $0 = hasRoom } }
        #expect(budget.waitingCount == 1 && told.withLock { $0 } == nil)
        holder.releaseAll()
        #expect(told.withLock { $0 } == true && budget.waitingCount == 0)
        #expect(try await Self.decode(file, under: budget).properties.dimensions == PixelSize(width: Self.side, height: Self.side))
    }

    @Test("A claim that does not stop for room fails at once when there is none")
    func claimThatDoesNotStop() throws {
        let budget = DecodeMemoryBudget(capacity: Self.perDecode)
        let holder = budget.claim(stopsForRoom: true)
        try holder.grow(to: Self.perDecode)
        let failing = budget.claim(stopsForRoom: false)
        #expect(throws: ImageCodecError.limitExceeded(.decodeMemoryBudget(1))) { try failing.grow(to: 1) }
        #expect(failing.stoppedForRoom == nil)
    }

    @Test("Outside a fetch's decode nothing is claimed")
    func noClaimOutsideFetches() throws {
        let image = try CodecCatalogue.shared.decode(try DecodeBomb.jpeg(side: 64))
        #expect(image.properties.dimensions == PixelSize(width: 64, height: 64))
    }
}
