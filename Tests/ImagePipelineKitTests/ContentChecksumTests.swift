@testable import ImagePipelineKit
import Testing

@Suite("The checksum of disk cache files and fleet tier values")
struct ContentChecksumTests {
    private static func checksum(_ bytes: [UInt8], chunks: [Int]) -> UInt64 {
        var checksum = ContentChecksum()
        var offset = 0
        for size in chunks + [bytes.count] where offset < bytes.count {
            let end = min(bytes.count, offset + size)
            bytes[offset..<end].withUnsafeBytes { checksum.update($0) }
            offset = end
        }
        return checksum.finalize()
    }

    @Test("The same bytes give the same checksum however they are split into updates")
    func independentOfChunking() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<10_007).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let whole = Self.checksum(bytes, chunks: [])
        #expect(Self.checksum(bytes, chunks: [1, 2, 3, 31, 33, 64, 100, 7]) == whole)
        #expect(Self.checksum(bytes, chunks: Array(repeating: 5, count: 3000)) == whole)
    }

    @Test("Any flipped bit, and any truncation, changes the checksum")
    func detectsDamage() {
        let bytes = (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let original = Self.checksum(bytes, chunks: [])
        var changed = 0
        for position in stride(from: 0, to: bytes.count, by: 97) {
            var damaged = bytes
            damaged[position] ^= 0x10
            if Self.checksum(damaged, chunks: []) != original { changed += 1 }
        }
        #expect(changed == (bytes.count + 96) / 97)
        #expect(Self.checksum(Array(bytes.dropLast()), chunks: []) != original)
    }
}
