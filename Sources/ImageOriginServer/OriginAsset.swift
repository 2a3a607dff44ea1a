import Foundation

/// One servable body and its validators: an in-memory asset set with
/// ``ImageOriginServer/setAsset(_:at:contentType:lastModified:etag:cacheControl:)``
/// or a file read from the served directory for one request.
struct OriginAsset: Sendable {
    /// The bytes, indexed from 0 (``init(data:contentType:lastModified:etag:)`` rebases slices).
    let data: Data
    let contentType: String
    /// Sent as `Last-Modified` (whole seconds) and compared with a date `If-Range`; `nil` sends none.
    let lastModified: Date?
    /// The strong entity tag, quotes included; `nil` sends none.
    let etag: String?
    /// Sent as `Cache-Control` with the asset (and with its `304`s); `nil` sends none.
    var cacheControl: String?

    init(data: Data, contentType: String, lastModified: Date?, etag: String?, cacheControl: String? = nil) {
        // Data slices keep their parent's indices; the body writer works with offsets from 0.
        self.data = data.startIndex == 0 ? data : Data(data)
        self.contentType = contentType
        self.lastModified = lastModified.map { Date(timeIntervalSince1970: $0.timeIntervalSince1970.rounded(.down)) }
        self.etag = etag
        self.cacheControl = cacheControl
    }

    /// A strong ETag for `data`: the quoted hex of a 64-bit content hash and the length, e.g. `"9c1f…-2a"`.
    ///
    /// Not cryptographic (the target depends on NIO only); collisions are as unlikely as tests need.
    static func derivedETag(for data: Data) -> String {
        "\"\(String(contentHash(data), radix: 16))-\(String(data.count, radix: 16))\""
    }

    /// Wraps `etag` in quotes unless it already is a quoted or weak (`W/"…"`) tag; an empty string means none.
    static func normalizedETag(_ etag: String) -> String? {
        if etag.isEmpty { return nil }
        if etag.hasPrefix("\"") || etag.hasPrefix("W/\"") { return etag }
        return "\"\(etag)\""
    }

    /// A 64-bit multiply-xorshift hash over 8-byte words (FNV-style mixing), fast enough in debug builds to
    /// hash a 20 MB asset per `setAsset` call.
    static func contentHash(_ data: Data) -> UInt64 {
        data.withUnsafeBytes { raw -> UInt64 in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ UInt64(raw.count)
            let prime: UInt64 = 0x0000_0100_0000_01b3
            let words = raw.count / 8
            var offset = 0
            for _ in 0..<words {
                let word = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                hash = (hash ^ word) &* prime
                hash ^= hash >> 29
                offset += 8
            }
            while offset < raw.count {
                hash = (hash ^ UInt64(raw[offset])) &* prime
                offset += 1
            }
            hash ^= hash >> 33
            hash = hash &* 0xff51_afd7_ed55_8ccd
            hash ^= hash >> 33
            return hash
        }
    }
}
