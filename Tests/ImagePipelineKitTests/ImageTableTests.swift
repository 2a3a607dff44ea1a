import Foundation
import Testing
@testable import ImagePipelineKit

/// A bitmap whose every pixel encodes its position and `seed`, so any mix-up of slots or rows shows.
private func patterned(_ width: Int, _ height: Int, seed: UInt8) throws -> Bitmap {
    try makeBitmap(width: width, height: height) { x, y in
        RGBA(r: UInt8(truncatingIfNeeded: x &+ Int(seed)), g: UInt8(truncatingIfNeeded: y), b: seed, a: 255)
    }
}

private func temporaryTablePath() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("ipk-table-\(UUID().uuidString).table").path
}

/// Runs `body` with a new table in a temporary file, removed afterwards.
private func withTable<T>(side: Int, capacity: Int, _ body: (ImageTable) throws -> T) throws -> T {
    let path = temporaryTablePath()
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(try ImageTable(path: path, side: side, capacity: capacity))
}

@Suite("ImageTable: decoded images in one memory-mapped file, a hit a view of the pixels with no decode or copy")
struct ImageTableTests {
    @Test("A stored image comes back as a view of the mapped file, the same pixels, without a copy; and after reopening")
    func storeHitReopen() throws {
        let path = temporaryTablePath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let original = try patterned(40, 30, seed: 7)
        do {
            let table = try ImageTable(path: path, side: 64, capacity: 4)
            #expect(table.store(original, identifier: "a"))
            let first = try #require(table.image(for: "a"))
            let second = try #require(table.image(for: "a"))
            #expect(first.packedPixels() == original.packedPixels())
            // Both hits view the same mapped bytes: nothing was copied out.
            let firstStart = first.withUnsafeBytes { $0.baseAddress }
            #expect(firstStart == second.withUnsafeBytes { $0.baseAddress })
            #expect(first.bytesPerRow == Bitmap.alignedBytesPerRow(forWidth: 64))
            #expect(table.image(for: "b") == nil)
        }
        let reopened = try ImageTable(path: path, side: 64, capacity: 4)
        #expect(reopened.count == 1)
        #expect(try #require(reopened.image(for: "a")).packedPixels() == original.packedPixels())
    }

    @Test("A full table reuses its least recently hit slot, never one a live view holds")
    func evictionRespectsLeases() throws {
        try withTable(side: 16, capacity: 2) { table in
            let a = try patterned(16, 16, seed: 1), b = try patterned(16, 16, seed: 2), c = try patterned(16, 16, seed: 3)
            #expect(table.store(a, identifier: "a") && table.store(b, identifier: "b"))
            var heldA = Optional(try #require(table.image(for: "a")))   // a is the more recently hit, and leased
            _ = table.image(for: "b")   // b is hit later but not held
            #expect(table.store(c, identifier: "c"))   // replaces b: a is leased
            #expect(table.image(for: "b") == nil)
            #expect(heldA?.packedPixels() == a.packedPixels())
            var heldC = Optional(try #require(table.image(for: "c")))
            // Both slots leased: nothing can be stored, and what is held stays intact.
            #expect(!table.store(b, identifier: "b"))
            #expect(heldA?.packedPixels() == a.packedPixels() && heldC?.packedPixels() == c.packedPixels())
            heldA = nil
            heldC = nil
            // Leases gone: the least recently hit (a, hit before c) goes first.
            #expect(table.store(b, identifier: "b"))
            #expect(table.image(for: "a") == nil)
            #expect(try #require(table.image(for: "c")).packedPixels() == c.packedPixels())
            #expect(try #require(table.image(for: "b")).packedPixels() == b.packedPixels())
        }
    }

    @Test("Storing an identifier again replaces its image; an oversized image or identifier is refused")
    func replaceAndRefuse() throws {
        try withTable(side: 32, capacity: 3) { table in
            #expect(table.store(try patterned(32, 32, seed: 1), identifier: "x"))
            let held = try #require(table.image(for: "x"))
            let replacement = try patterned(20, 10, seed: 9)
            #expect(table.store(replacement, identifier: "x"))   // into another slot: the old one is leased
            #expect(try #require(table.image(for: "x")).packedPixels() == replacement.packedPixels())
            #expect(held.size == PixelSize(width: 32, height: 32))
            #expect(table.count == 1)
            #expect(!table.store(try patterned(33, 8, seed: 0), identifier: "wide"))
            #expect(!table.store(replacement, identifier: String(repeating: "i", count: ImageTable.maxIdentifierBytes + 1)))
            #expect(table.store(replacement, identifier: "../../etc/passwd"))   // identifiers never become paths
        }
    }

    @Test("A slot whose pixels changed behind the table's back (a torn write) is dropped on its first hit, never shown")
    func tornSlotIsDropped() throws {
        let path = temporaryTablePath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let table = try ImageTable(path: path, side: 16, capacity: 2)
            #expect(table.store(try patterned(16, 16, seed: 4), identifier: "good"))
            #expect(table.store(try patterned(16, 16, seed: 5), identifier: "torn"))
        }
        // Flip a byte of the second slot's pixels: file header page, slot 0 (header page + pixels), slot 1's header page.
        let slotPixelBytes = (Bitmap.alignedBytesPerRow(forWidth: 16) * 16 + 4095) / 4096 * 4096
        let offset = UInt64(4096 + (4096 + slotPixelBytes) + 4096 + 100)
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        try handle.seek(toOffset: offset)
        let byte = try #require(try handle.read(upToCount: 1)).first!
        try handle.seek(toOffset: offset)
        try handle.write(contentsOf: Data([byte ^ 0xFF]))
        try handle.close()

        let table = try ImageTable(path: path, side: 16, capacity: 2)
        #expect(table.count == 2)   // opening reads headers only
        #expect(table.image(for: "torn") == nil)
        #expect(table.count == 1)
        #expect(try #require(table.image(for: "good")).packedPixels() == (try patterned(16, 16, seed: 4)).packedPixels())
        // A table of another geometry on the same file starts empty instead of misreading it.
        #expect(try ImageTable(path: path, side: 8, capacity: 2).count == 0)
    }

    @Test("Bad geometry is a typed error")
    func badGeometry() {
        #expect(throws: ImageTableError.invalidGeometry(side: 0, capacity: 4)) {
            _ = try ImageTable(path: temporaryTablePath(), side: 0, capacity: 4)
        }
        #expect(throws: ImageTableError.self) {
            _ = try ImageTable(path: "/nonexistent-dir/x.table", side: 8, capacity: 1)
        }
    }
}
