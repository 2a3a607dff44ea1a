import Foundation

/// A fast 64-bit checksum of bytes kept outside the process, to catch corruption and truncation (not forgery:
/// the fleet's HMAC-SHA256 is for that): the disk cache's files, and the fleet tier's values (their metadata and
/// image). Four independent lanes of multiply-rotate over 8-byte words, folded and finished with a 64-bit
/// avalanche, in the style of xxHash64: about 12 µs for 140 KB, where a SHA-256 of a 200 KB image cost more
/// than the Redis round trip that fetched it.
package struct ContentChecksum {
    private static let prime1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let prime2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let prime3: UInt64 = 0x1656_67B1_9E37_79F9

    private var lanes: (UInt64, UInt64, UInt64, UInt64) = (Self.prime1 &+ Self.prime2, Self.prime2, 0, 0 &- Self.prime1)
    private var length: UInt64 = 0
    /// Bytes of an update that did not fill a 32-byte stripe, carried to the next update.
    private var pending: [UInt8] = []

    package init() {}

    /// The checksum of `data` alone.
    package static func of(_ data: Data) -> UInt64 {
        var checksum = ContentChecksum()
        data.withUnsafeBytes { checksum.update($0) }
        return checksum.finalize()
    }

    /// Adds `bytes` to the checksum.
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        length &+= UInt64(bytes.count)
        var offset = 0
        if !pending.isEmpty {
            let take = min(32 - pending.count, bytes.count)
            pending.append(contentsOf: bytes[0..<take])
            offset = take
            guard pending.count == 32 else { return }
            pending.withUnsafeBytes { consumeStripes($0) }
            pending.removeAll(keepingCapacity: true)
        }
        let stripes = (bytes.count - offset) / 32 * 32
        if stripes > 0 { consumeStripes(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + stripes)])) }
        pending.append(contentsOf: bytes[(offset + stripes)...])
    }

    private mutating func consumeStripes(_ bytes: UnsafeRawBufferPointer) {
        var (a, b, c, d) = lanes
        var offset = 0
        while offset < bytes.count {
            a = Self.round(a, bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            b = Self.round(b, bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
            c = Self.round(c, bytes.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self))
            d = Self.round(d, bytes.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self))
            offset += 32
        }
        lanes = (a, b, c, d)
    }

    private static func round(_ lane: UInt64, _ word: UInt64) -> UInt64 {
        let mixed = lane &+ UInt64(littleEndian: word) &* prime2
        return ((mixed << 31) | (mixed >> 33)) &* prime1
    }

    /// The checksum of everything added.
    package func finalize() -> UInt64 {
        let (a, b, c, d) = lanes
        var hash = ((a << 1) | (a >> 63)) &+ ((b << 7) | (b >> 57)) &+ ((c << 12) | (c >> 52)) &+ ((d << 18) | (d >> 46))
        hash &+= length
        for byte in pending {
            hash ^= UInt64(byte) &* Self.prime3
            hash = ((hash << 11) | (hash >> 53)) &* Self.prime1
        }
        hash ^= hash >> 33
        hash &*= Self.prime2
        hash ^= hash >> 29
        hash &*= Self.prime3
        hash ^= hash >> 32
        return hash
    }
}
