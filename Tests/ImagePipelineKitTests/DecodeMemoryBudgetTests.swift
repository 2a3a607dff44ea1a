import Foundation
import Testing
import TestSupport
@testable import ImagePipelineKit

/// The budget for the pixels of decodes in flight, with real decodes on real threads.
@Suite("Decode memory budget: concurrent decodes never hold more than the budget together")
struct DecodeMemoryBudgetTests {
    static let side = 3000
    static let perDecode = Bitmap.alignedBytesPerRow(forWidth: side) * side

    /// Decodes `data` under a claim of `budget`, as a fetch does, and gives the claim back.
    static func decode(_ data: Data, under budget: DecodeMemoryBudget) throws -> DecodedImage {
        let claim = budget.claim(waits: true)
        defer { claim.releaseAll() }
        return try DecodeMemoryBudget.Claim.$current.withValue(claim) { try CodecCatalogue.shared.decode(data) }
    }

    @Test("Eight concurrent decodes of files declaring 3000x3000 all succeed, never holding more than the budget")
    func boundedConcurrency() async throws {
        let budget = DecodeMemoryBudget(capacity: 2 * Self.perDecode + Self.perDecode / 2)
        let files = try (0..<8).map { try DecodeBomb.jpeg(side: Self.side, variant: $0) }
        let sizes = try await withThrowingTaskGroup(of: PixelSize.self) { group in
            for file in files {
                group.addTask { try await offloaded { try Self.decode(file, under: budget).properties.dimensions } }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(sizes == Array(repeating: PixelSize(width: Self.side, height: Self.side), count: 8))
        #expect(budget.peakInUse <= budget.capacity)
        #expect(budget.peakInUse >= Self.perDecode)
        #expect(budget.inUse == 0)
    }

    @Test("A decode larger than the whole budget fails at once with its own limit, and holds nothing")
    func tooLargeForTheBudget() throws {
        let budget = DecodeMemoryBudget(capacity: Self.perDecode / 2)
        #expect(throws: ImageCodecError.limitExceeded(.decodeMemoryBudget(Self.perDecode))) {
            _ = try Self.decode(try DecodeBomb.jpeg(side: Self.side), under: budget)
        }
        #expect(budget.inUse == 0)
    }

    @Test("Outside a fetch's decode nothing is claimed")
    func noClaimOutsideFetches() throws {
        let image = try CodecCatalogue.shared.decode(try DecodeBomb.jpeg(side: 64))
        #expect(image.properties.dimensions == PixelSize(width: 64, height: 64))
    }
}
