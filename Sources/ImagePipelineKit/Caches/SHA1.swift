/// SHA-1 (FIPS 180-4), used only to shorten over-long cache file names the way TIP does.
///
/// Not for security: SHA-1 is broken for that. It is here because TIP's on-disk names are SHA-1 digests, and
/// pulling a crypto library into every build for one 40-character name is not worth it.
enum SHA1 {
    /// The lowercase hex digest of `bytes`.
    static func hexDigest<Bytes: Collection<UInt8>>(of bytes: Bytes) -> String {
        digest(of: Array(bytes)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// The 20-byte digest of `message`.
    static func digest(of message: [UInt8]) -> [UInt8] {
        var h: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
        // Padding: a one bit, zeros to 56 mod 64, then the message length in bits, big-endian.
        var padded = message
        padded.append(0x80)
        while padded.count % 64 != 56 { padded.append(0) }
        let bitLength = UInt64(message.count) &* 8
        for shift in stride(from: 56, through: 0, by: -8) { padded.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }

        var w = [UInt32](repeating: 0, count: 80)
        for block in stride(from: 0, to: padded.count, by: 64) {
            for i in 0..<16 {
                let j = block + i * 4
                w[i] = UInt32(padded[j]) << 24 | UInt32(padded[j + 1]) << 16 | UInt32(padded[j + 2]) << 8 | UInt32(padded[j + 3])
            }
            for i in 16..<80 { w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotatedLeft(by: 1) }
            var (a, b, c, d, e) = h
            for i in 0..<80 {
                let (f, k): (UInt32, UInt32) = switch i {
                case 0..<20: ((b & c) | (~b & d), 0x5A82_7999)
                case 20..<40: (b ^ c ^ d, 0x6ED9_EBA1)
                case 40..<60: ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                default: (b ^ c ^ d, 0xCA62_C1D6)
                }
                let temp = a.rotatedLeft(by: 5) &+ f &+ e &+ k &+ w[i]
                (e, d, c, b, a) = (d, c, b.rotatedLeft(by: 30), a, temp)
            }
            h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
        }
        return [h.0, h.1, h.2, h.3, h.4].flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (24 - 8 * $0)) } }
    }
}

private extension UInt32 {
    func rotatedLeft(by count: UInt32) -> UInt32 { self << count | self >> (32 - count) }
}
