import Foundation
import Testing
import TestSupport
@testable import ImagePipelineKit

@Suite("Disk cache hygiene and metadata (scenarios 52, 53)")
struct DiskCacheHygieneTests {
    let configuration = GlobalConfiguration()
    let problems = ProblemLog()
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-hygiene-\(UUID().uuidString)").path

    init() { configuration.problemObserver = problems }

    func cache() throws -> DiskCache {
        try DiskCache(directory: root + "/p", owner: "p", pool: configuration.diskPool)
    }

    func image(_ bytes: Int, width: Int, url: String = "http://t/a", ttl: TimeInterval = 3600, at date: Date = Date()) -> CachedImageData {
        CachedImageData(data: Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ width) }), url: URL(string: url)!,
                        dimensions: PixelSize(width: width, height: width), timeToLive: ttl, lastAccess: date)
    }

    func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: root + "/p/" + name) }

    @Test("Scenario 52: opening removes a stray 0-byte file, an unindexed file, an expired entry, a partial no larger than its complete image and a row whose file is gone")
    func falseEntriesRemovedOnOpen() async throws {
        var first: DiskCache? = try cache()
        first?.storeComplete(image(300, width: 40), identifier: "kept")
        first?.storeComplete(image(300, width: 40, ttl: 5, at: Date(timeIntervalSinceNow: -60)), identifier: "expired")
        first?.storePartial(PartialImageData(data: Data(repeating: 9, count: 100), url: URL(string: "http://t/p")!,
                                             dimensions: PixelSize(width: 100, height: 100), expectedByteCount: 1000),
                            identifier: "shrunk")
        first?.storeComplete(image(200, width: 10), identifier: "shrunk")   // smaller: the partial stays, for now
        first?.storeComplete(image(200, width: 30), identifier: "vanished")
        // (The first open's own sweep may already have removed "expired": it runs in the background.)
        #expect(first?.entry(for: "vanished") != nil && first?.entry(for: "shrunk")?.partial != nil)
        first = nil

        // What a crash or an outside hand leaves: stray files, a partial that has become smaller than its
        // complete image, a file deleted behind the index's back.
        try Data().write(to: URL(fileURLWithPath: root + "/p/empty"))
        try Data(count: 64).write(to: URL(fileURLWithPath: root + "/p/no-index-row"))
        let index = try SQLiteDatabase(path: root + "/p/%index.sqlite")
        try index.execute("UPDATE entries SET width = 5, height = 5 WHERE identifier = 'shrunk' AND partial = 1")
        try FileManager.default.removeItem(atPath: root + "/p/vanished")

        let reopened = try cache()
        #expect(try await eventually { !exists("empty") && !exists("no-index-row") && reopened.totalCount == 2 })
        #expect(reopened.entry(for: "kept")?.complete?.data == image(300, width: 40).data)
        #expect(reopened.entry(for: "shrunk")?.partial == nil && reopened.entry(for: "shrunk")?.complete != nil)
        #expect(!exists("expired") && !exists("shrunk%tmp") && exists("kept"))
        #expect(configuration.totalCountForAllDiskCaches == 2)
        #expect(configuration.totalBytesForAllDiskCaches == 500)
        #expect(problems.all.contains { if case .diskCacheEntryCorrupt("vanished", _) = $0 { true } else { false } })
    }

    @Test("Empty data is never stored: a 0-byte entry would be a false entry")
    func emptyDataRefused() throws {
        let c = try cache()
        #expect(!c.storeComplete(image(0, width: 10), identifier: "I"))
        #expect(c.entry(for: "I") == nil && c.totalCount == 0)
    }

    @Test("Scenario 53: a complete entry's index row holds exactly TIP's metadata set, with a placeholder flag")
    func metadataSet() throws {
        let c = try cache()
        // Unexpired by the wall clock, so the open's background sweep leaves it alone.
        let stored = Date(timeIntervalSinceReferenceDate: Date().timeIntervalSinceReferenceDate.rounded(.down) - 60)
        var entry = image(120, width: 20, ttl: 600, at: stored)
        entry.isPlaceholder = true
        entry.updatesExpiryOnAccess = false
        c.storeComplete(entry, identifier: "I")
        let index = try SQLiteDatabase(path: root + "/p/%index.sqlite")
        let columns = try index.statement("SELECT name FROM pragma_table_info('entries')")
        var names: [String] = []
        while try columns.step() { names.append(columns.text(0) ?? "") }
        // TIP's xattrs URL, LAD, TTL, uTTL, dX/dY, ANI, LMD, clen, pl, plus what this index adds: the file's
        // name, inode, size and checksum (checked on every read), the ETag (resume with a strong validator) and
        // what the HTTP freshness policy reads of the response (NULL for an image stored by hand, as here).
        #expect(Set(names) == ["identifier", "partial", "file", "inode", "bytes", "url", "width", "height", "last_access",
                               "ttl", "updates_expiry", "last_modified", "etag", "expected_length", "placeholder", "animated",
                               "cache_control", "expires", "response_date", "age", "received_at", "checksum"])
        let row = try index.statement("""
            SELECT url, width, height, last_access, ttl, updates_expiry, last_modified, etag, expected_length, placeholder,
                   animated, bytes, file FROM entries WHERE identifier = 'I' AND partial = 0
            """)
        #expect(try row.step())
        #expect(row.text(0) == "http://t/a" && row.int(1) == 20 && row.int(2) == 20)
        #expect(row.double(3) == stored.timeIntervalSinceReferenceDate && row.double(4) == 600 && row.int(5) == 0)
        #expect(row.text(6) == nil && row.text(7) == nil && row.int(8) == 0)
        #expect(row.int(9) == 1 && row.int(10) == 0 && row.int(11) == 120 && row.text(12) == "I")
    }
}
