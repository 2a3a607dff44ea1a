import Foundation
import Testing
import TestSupport
@testable import ImagePipelineKit

@Suite("HTTP freshness: Cache-Control parsing, freshness lifetimes and ages")
struct HTTPFreshnessTests {
    @Test("Cache-Control directives are read whatever their case, spacing, quoting and order, across several header lines")
    func parsesDirectives() {
        let parsed = CacheControl(parsing: [" Public ,MAX-AGE=\"600\" , , Immutable", "no-cache=\"Set-Cookie, X-Foo\", must-revalidate"])
        #expect(parsed.maxAge == 600 && parsed.immutable && parsed.noCache && parsed.mustRevalidate && !parsed.noStore)
        #expect(CacheControl(parsing: "no-store").noStore)
        // A comma inside a quoted value does not start a directive.
        #expect(CacheControl(parsing: "private=\"a, no-store\"").noStore == false)
        #expect(CacheControl(parsing: "").maxAge == nil && CacheControl(parsing: ",,,") == CacheControl())
    }

    @Test("A broken or huge max-age is stale or capped, and the first max-age wins")
    func maxAgeEdgeCases() {
        #expect(CacheControl(parsing: "max-age=abc").maxAge == 0)
        #expect(CacheControl(parsing: "max-age=-5").maxAge == 0)
        #expect(CacheControl(parsing: "max-age").maxAge == 0)
        #expect(CacheControl(parsing: "max-age=99999999999999999999999").maxAge == CacheControl.maxDeltaSeconds)
        #expect(CacheControl(parsing: "max-age=0000000000000000000060").maxAge == 60)
        #expect(CacheControl(parsing: "max-age=60, max-age=0").maxAge == 60)
        #expect(CacheControl(parsing: "s-maxage=10").maxAge == nil)
    }

    @Test("Freshness comes from max-age, else Expires minus Date, else a tenth of the age since Last-Modified capped at the fallback, else the fallback")
    func freshnessLifetimes() {
        let received = Date(timeIntervalSince1970: 1_800_000_000)
        func headers(_ fields: [(String, String)]) -> DownloadHeaders { DownloadHeaders(fields.map { (name: $0.0, value: $0.1) }) }
        let maxAge = HTTPCacheMetadata(headers: headers([("Cache-Control", "max-age=60"), ("Expires", HTTPDate.format(received + 999))]),
                                       receivedAt: received)
        #expect(maxAge.freshnessLifetime(fallback: 5) == 60)
        let expires = HTTPCacheMetadata(headers: headers([("Date", HTTPDate.format(received - 10)),
                                                          ("Expires", HTTPDate.format(received + 90))]), receivedAt: received)
        #expect(expires.freshnessLifetime(fallback: 5) == 100)
        #expect(HTTPCacheMetadata(headers: headers([("Expires", "0")]), receivedAt: received).freshnessLifetime(fallback: 5) == 0)
        let heuristic = HTTPCacheMetadata(headers: headers([("Last-Modified", HTTPDate.format(received - 1000))]), receivedAt: received)
        #expect(heuristic.freshnessLifetime(fallback: 3600) == 100)
        #expect(heuristic.freshnessLifetime(fallback: 50) == 50)
        #expect(HTTPCacheMetadata(headers: headers([]), receivedAt: received).freshnessLifetime(fallback: 42) == 42)
    }

    @Test("An image's age counts the Age header or the Date gap, plus the time since it arrived; no-cache is never fresh")
    func agesAndNoCache() {
        let received = Date(timeIntervalSince1970: 1_800_000_000)
        let aged = HTTPCacheMetadata(cacheControl: "max-age=100", date: received - 30, age: 50, receivedAt: received)
        #expect(aged.currentAge(at: received + 10) == 60)
        #expect(aged.isFresh(at: received + 49, fallbackLifetime: 0) && !aged.isFresh(at: received + 50, fallbackLifetime: 0))
        let noCache = HTTPCacheMetadata(entityTag: "\"x\"", cacheControl: "max-age=100, no-cache", receivedAt: received)
        #expect(!noCache.isFresh(at: received, fallbackLifetime: 1000) && noCache.hasValidator)
        #expect(!HTTPCacheMetadata(receivedAt: received).hasValidator)
    }

    @Test("A 304 refreshes the fields it carries and keeps the others")
    func refreshFromNotModified() {
        let received = Date(timeIntervalSince1970: 1_800_000_000)
        let stored = HTTPCacheMetadata(entityTag: "\"a\"", lastModified: "Mon, 01 Jan 2024 00:00:00 GMT", cacheControl: "max-age=0",
                                       expires: nil, date: received - 5, age: 3, receivedAt: received)
        let refreshed = stored.refreshed(by: ["Cache-Control": "max-age=60", "ETag": "\"a\""], at: received + 100)
        #expect(refreshed.cacheControl == "max-age=60" && refreshed.entityTag == "\"a\"")
        #expect(refreshed.lastModified == stored.lastModified && refreshed.receivedAt == received + 100)
        #expect(refreshed.date == nil && refreshed.age == 0)
        #expect(refreshed.isFresh(at: received + 150, fallbackLifetime: 0))
    }
}

@Suite("Disk index schema: response metadata columns, and indexes written before them")
struct DiskIndexUpgradeTests {
    let configuration = GlobalConfiguration()
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-upgrade-\(UUID().uuidString)").path

    @Test("An index written by the first schema opens: its entries are read as before, without response metadata, and new entries keep theirs")
    func firstSchemaIndexOpens() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let directory = root + "/p"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let bytes = Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        try bytes.write(to: URL(fileURLWithPath: directory + "/old"))
        let inode = try #require(POSIXCacheFileSystem().inode(of: directory + "/old"))
        do {
            // The first schema, exactly as the library created it, and a row as it wrote one.
            let old = try SQLiteDatabase(path: directory + "/%index.sqlite")
            try old.execute("""
                CREATE TABLE entries (
                    identifier TEXT NOT NULL, partial INTEGER NOT NULL, file TEXT NOT NULL, inode INTEGER NOT NULL,
                    bytes INTEGER NOT NULL, url TEXT NOT NULL, width INTEGER, height INTEGER, last_access REAL NOT NULL,
                    ttl REAL NOT NULL, updates_expiry INTEGER NOT NULL, last_modified TEXT, etag TEXT,
                    expected_length INTEGER NOT NULL, placeholder INTEGER NOT NULL, animated INTEGER NOT NULL,
                    PRIMARY KEY (identifier, partial));
                CREATE INDEX entries_by_access ON entries (last_access);
                CREATE INDEX entries_by_file ON entries (file);
                """)
            try old.run("""
                INSERT INTO entries VALUES ('old', 0, 'old', ?, 300, 'http://t/old', 20, 10, ?, 3600, 1, NULL, NULL, 0, 0, 0)
                """, [.integer(Int(Int64(bitPattern: inode))), .real(Date().timeIntervalSinceReferenceDate)])
            #expect(try DiskCacheIndexSchema.version(of: old) == 0)
        }

        let cache = try DiskCache(directory: directory, owner: "p", pool: configuration.diskPool)
        let entry = try #require(cache.entry(for: "old")?.complete)
        #expect(isSameBytes(entry.data, bytes) && entry.dimensions == PixelSize(width: 20, height: 10))
        #expect(entry.httpMetadata == nil)
        #expect(try DiskCacheIndexSchema.version(of: SQLiteDatabase(path: directory + "/%index.sqlite")) == DiskCacheIndexSchema.currentVersion)

        let metadata = HTTPCacheMetadata(entityTag: "\"n\"", cacheControl: "max-age=60", expires: "0",
                                         date: Date(timeIntervalSinceReferenceDate: 800_000_000), age: 7,
                                         receivedAt: Date(timeIntervalSinceReferenceDate: 800_000_010))
        var new = CachedImageData(data: Data(repeating: 1, count: 50), url: URL(string: "http://t/new")!,
                                  dimensions: PixelSize(width: 5, height: 5))
        new.httpMetadata = metadata
        #expect(cache.storeComplete(new, identifier: "new"))
        #expect(cache.entry(for: "new")?.complete?.httpMetadata == metadata)
        #expect(cache.completeEntryMetadata(for: "new")?.metadata == metadata)

        // A 304's refresh rewrites the metadata only.
        var refreshed = metadata
        refreshed.cacheControl = "max-age=120"
        #expect(cache.refreshMetadata(refreshed, identifier: "new", url: URL(string: "http://t/new")!))
        #expect(!cache.refreshMetadata(refreshed, identifier: "new", url: URL(string: "http://t/other")!))
        #expect(cache.entry(for: "new")?.complete?.httpMetadata?.cacheControl == "max-age=120")
    }
}
