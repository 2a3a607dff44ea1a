/// The file name an image identifier gets on disk (TIP's `TIPSafeFromRaw`).
///
/// Every UTF-8 byte outside `A–Z a–z 0–9 - . _ ~` is percent-encoded with uppercase hex, so a name never holds
/// a `/`, never starts with a dot-dot component that means anything, and never has a NUL. Encoded names
/// longer than 251 characters (`NAME_MAX` minus room for a 4-character suffix such as `.tmp`) become
/// ``hashedPrefix`` followed by the 40-character lowercase SHA-1 of the encoded form. Identifiers such as
/// `../x`, `/etc/passwd`, 10 KB strings or bytes that are not valid UTF-8 therefore always land inside the
/// pipeline's directory.
///
/// Hashed names live in a namespace of their own: without the prefix, an identifier that is itself 40
/// lowercase hex digits (a content hash, say) would get the same file as the long identifier whose SHA-1 it
/// is, and each would evict the other. No encoded name starts with `%s`, since `%` is always followed by two
/// uppercase hex digits there.
public enum SafeFileName {
    /// Longest encoded name kept as it is.
    public static let maximumLength = 251
    /// What every hashed name starts with.
    public static let hashedPrefix = "%sha1-"

    /// The on-disk name for `identifier`.
    public static func make(for identifier: String) -> String {
        let encoded = percentEncoded(identifier)
        return encoded.utf8.count > maximumLength ? hashedPrefix + SHA1.hexDigest(of: encoded.utf8) : encoded
    }

    /// `identifier` with every byte outside the unreserved set percent-encoded.
    public static func percentEncoded(_ identifier: String) -> String {
        // Written byte by byte into the string's own storage: every disk store and removal names a file.
        let out = String(unsafeUninitializedCapacity: identifier.utf8.count * 3) { buffer in
            var end = 0
            for byte in identifier.utf8 {
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                     UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                     UInt8(ascii: "~"):
                    buffer[end] = byte
                    end += 1
                default:
                    buffer[end] = UInt8(ascii: "%")
                    buffer[end + 1] = hexDigits[Int(byte >> 4)]
                    buffer[end + 2] = hexDigits[Int(byte & 0x0F)]
                    end += 3
                }
            }
            return end
        }
        // "." and ".." are unreserved but name directories: encode their dots.
        if out == "." || out == ".." { return String(repeating: "%2E", count: out.count) }
        return out
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// The identifier a non-hashed name came from, or `nil` for hashed or malformed names.
    public static func identifier(fromFileName name: String) -> String? {
        guard !name.hasPrefix(hashedPrefix) else { return nil }
        var bytes: [UInt8] = []
        var iterator = name.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - 48
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - 55
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - 87
        default: nil
        }
    }
}
