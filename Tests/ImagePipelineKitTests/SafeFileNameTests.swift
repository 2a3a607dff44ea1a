import Foundation
import Testing
@testable import ImagePipelineKit

@Suite("Safe file names: percent-encoded as TIP names them, SHA-1 in a namespace of its own when too long")
struct SafeFileNameTests {
    @Test("Scenario 2: a URL identifier is percent-encoded with uppercase hex")
    func urlIdentifier() {
        #expect(SafeFileName.make(for: "http://x.com/a.jpg?q=1") == "http%3A%2F%2Fx.com%2Fa.jpg%3Fq%3D1")
        #expect(SafeFileName.identifier(fromFileName: "http%3A%2F%2Fx.com%2Fa.jpg%3Fq%3D1") == "http://x.com/a.jpg?q=1")
    }

    @Test("Scenario 3: SHA-1 vectors, 251 encoded characters kept, longer names hashed as TIP does (behind the hashed prefix)")
    func hashing() {
        #expect(SHA1.hexDigest(of: "Twitter".utf8) == "5392c950bdde4be7e5f5b8fdc6a1ca5f21e905cf")
        #expect(SHA1.hexDigest(of: "".utf8) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(SHA1.hexDigest(of: Array(repeating: UInt8(ascii: "a"), count: 1_000_000))
                == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
        // TIP's own vector: an identifier one character past the limit once encoded.
        let overLimit = "https://o.twimg.com/2/proxy.jpg?t=HBiTAWh0dHBzOi8vdi5jZG4udmluZS5jby9yL3ZpZGVvcy82RjdBMzc5MjUyMTIwOTk5NDE4NTE5ODIxMTA3Ml8zOWM4YmY1NDVlNS4yLjEuMjMyMzYwNjUzOTk1MjIzNTMxMC5tcDQuanBnP3ZlcnNpbJKcXQxZTZxYjRJRFFFWDJQVFhNZF9hehTABxTABwBIA&s=4ct"
        #expect(SafeFileName.make(for: overLimit) == "%sha1-2940de9921a9c5b785d1aadf229f469b7b898602")
        let exactly251 = String(repeating: "a", count: 251)
        #expect(SafeFileName.make(for: exactly251) == exactly251)
        let encoded254 = String(repeating: "a", count: 251) + "/"   // 251 + "%2F" = 254 characters
        #expect(SafeFileName.make(for: encoded254) == "%sha1-" + SHA1.hexDigest(of: (exactly251 + "%2F").utf8))
    }

    @Test("An identifier that is 40 hex digits never gets the file of the long identifier whose SHA-1 it is")
    func hashedNamespace() {
        let long = String(repeating: "x", count: 300)
        let digest = SHA1.hexDigest(of: long.utf8)
        #expect(SafeFileName.make(for: digest) == digest)
        #expect(SafeFileName.make(for: long) != SafeFileName.make(for: digest))
        #expect(SafeFileName.identifier(fromFileName: SafeFileName.make(for: digest)) == digest)
        #expect(SafeFileName.identifier(fromFileName: SafeFileName.make(for: long)) == nil)
    }

    @Test("Hostile identifiers never name anything outside the directory", arguments: [
        "../x", "/etc/passwd", ".", "..", "a/../../b", "\u{0}", String(repeating: "é/", count: 5000),
    ])
    func hostile(_ identifier: String) {
        let name = SafeFileName.make(for: identifier)
        #expect(!name.contains("/") && name != "." && name != ".." && !name.contains("\u{0}") && !name.isEmpty)
        #expect(name.utf8.count <= SafeFileName.maximumLength)
    }

    @Test("Identifiers that are not valid UTF-8 still get a safe, stable name")
    func invalidUTF8() {
        let identifier = String(decoding: [0x61, 0xFF, 0xFE, 0x2F, 0x2E, 0x2E], as: UTF8.self)
        let name = SafeFileName.make(for: identifier)
        #expect(name == SafeFileName.make(for: identifier))
        #expect(!name.contains("/"))
    }
}
