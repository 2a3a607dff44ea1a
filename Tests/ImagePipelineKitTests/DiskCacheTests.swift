import Foundation
import Synchronization
import MetricsTestKit
import Testing
import TestSupport
@testable import ImagePipelineKit

/// A file system whose writes fail with ENOSPC while `full` is set: a disk that filled up.
final class FillingFileSystem: ForwardingCacheFileSystem, @unchecked Sendable {
    // @unchecked: `full` is an atomic flag.
    private let posix = POSIXCacheFileSystem()
    let full = Atomic<Bool>(false)
    func write(_ data: Data, to path: String) throws(DiskCacheError) {
        if full.load(ordering: .relaxed) {
            // A real full disk leaves a partly written file behind before failing.
            try? posix.write(data.prefix(data.count / 2), to: path)
            throw .file(operation: "write", errno: ENOSPC)
        }
        try posix.write(data, to: path)
    }
}

/// A file system that notes, at each unlink of a file, whether another thread could take the disk lock at that
/// moment.
///
/// A remove of a name that is no longer there is not counted: the cache's background sweep lists the directory
/// and, when it runs late (a loaded machine), may ask to remove a name it listed before that entry was evicted
/// and its file renamed away. Nothing is unlinked then.
final class LockProbingFileSystem: ForwardingCacheFileSystem, @unchecked Sendable {
    // @unchecked: immutable but for the atomic counters.
    private let pool: DiskCachePool
    let removals = Atomic<Int>(0)
    let removalsHoldingLock = Atomic<Int>(0)
    init(pool: DiskCachePool) { self.pool = pool }
    func remove(_ path: String) {
        guard access(path, F_OK) == 0 else { return }
        removals.add(1, ordering: .relaxed)
        let taken = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { [pool] in pool.withLock {}; taken.signal() }
        if taken.wait(timeout: .now() + 5) == .timedOut { removalsHoldingLock.add(1, ordering: .relaxed) }
        POSIXCacheFileSystem().remove(path)
    }
}

@Suite("Disk cache: entries and metadata, global limits and expiry, and failures handled better than TIP")
struct DiskCacheTests: DiskCacheFixtures {
    let configuration = GlobalConfiguration()
    let problems = ProblemLog()
    let root: String

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-disk-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        configuration.problemObserver = problems
    }

    func cache(_ owner: String, fileSystem: any CacheFileSystem = POSIXCacheFileSystem()) throws -> DiskCache {
        try DiskCache(directory: root + "/" + owner, owner: owner, pool: configuration.diskPool, fileSystem: fileSystem)
    }

    @Test("Entries survive closing and reopening the cache, with their metadata and totals")
    func persistence() throws {
        let stored = image(5000)
        var first: DiskCache? = try cache("p")
        #expect(first?.storeComplete(stored, identifier: "I") == true)
        #expect(configuration.totalBytesForAllDiskCaches == 5000)
        first = nil
        #expect(configuration.totalBytesForAllDiskCaches == 0)   // released: totals given back
        let reopened = try cache("p")
        #expect(configuration.totalBytesForAllDiskCaches == 5000 && configuration.totalCountForAllDiskCaches == 1)
        let entry = try #require(reopened.entry(for: "I")?.complete)
        #expect(entry.data == stored.data && entry.url == stored.url && entry.dimensions == stored.dimensions)
        #expect(FileManager.default.fileExists(atPath: root + "/p/I"))
    }

    @Test("Hostile identifiers never leave the pipeline's directory", arguments: [
        "../x", "/etc/passwd", "..", "a/../../b", String(repeating: "é", count: 5000),
        String(decoding: [0x2E, 0x2E, 0x2F, 0xFF, 0xFE], as: UTF8.self),
    ])
    func hostileIdentifiers(_ identifier: String) throws {
        let p = try cache("p")
        #expect(p.storeComplete(image(10), identifier: identifier))
        #expect(p.entry(for: identifier)?.complete?.data == image(10).data)
        let outside = try FileManager.default.contentsOfDirectory(atPath: root)
        #expect(outside == ["p"])
    }

    @Test("A truncated or replaced file is detected on read, removed and reported; the next store replaces it")
    func corruption() throws {
        let p = try cache("p")
        p.storeComplete(image(4000), identifier: "truncated")
        p.storeComplete(image(4000), identifier: "replaced")
        truncate(root + "/p/truncated", 100)
        // Another file renamed over the entry: the crash-between-rename-and-commit case. Written outside the
        // pipeline's directory first: the open's background sweep rightly deletes files the index does not know.
        try Data(count: 4000).write(to: URL(fileURLWithPath: root + "/other"))
        #expect(rename(root + "/other", root + "/p/replaced") == 0)
        #expect(p.entry(for: "truncated") == nil)
        #expect(p.entry(for: "replaced") == nil)
        let corrupt = problems.all.filter { if case .diskCacheEntryCorrupt = $0 { true } else { false } }
        #expect(corrupt.count == 2)
        #expect(p.totalCount == 0 && configuration.totalBytesForAllDiskCaches == 0)
        #expect(p.storeComplete(image(4000), identifier: "replaced"))
        #expect(p.entry(for: "replaced")?.complete?.data == image(4000).data)
    }

    @Test("A file garbled in place (same inode, same size), as a power cut can leave an unflushed file, fails its checksum on read: removed and reported, never served")
    func garbledInPlace() throws {
        let p = try cache("p")
        let stored = image(4000, seed: 5)
        #expect(p.storeComplete(stored, identifier: "garbled"))
        let path = root + "/p/garbled"
        let inodeBefore = try #require(POSIXCacheFileSystem().inode(of: path))
        // Zeroes over the middle of the file, written through the same inode without changing its length.
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        try handle.seek(toOffset: 1000)
        try handle.write(contentsOf: Data(count: 64))
        try handle.close()
        #expect(POSIXCacheFileSystem().inode(of: path) == inodeBefore)
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) == 4000)

        #expect(p.entry(for: "garbled") == nil)
        let reasons = problems.all.compactMap { problem -> String? in
            if case .diskCacheEntryCorrupt(identifier: "garbled", let reason) = problem { reason } else { nil }
        }
        #expect(reasons.count == 1 && reasons.first?.contains("checksum") == true)
        #expect(p.totalCount == 0 && !FileManager.default.fileExists(atPath: path))
    }

    @Test("A full disk loses no existing entry: the failed write is reported and the old bytes stay readable")
    func fullDisk() throws {
        let fileSystem = FillingFileSystem()
        let recorded = TestMetrics()
        configuration.metricsFactory = recorded
        let p = try cache("p", fileSystem: fileSystem)
        let original = image(3000, width: 100, seed: 1)
        #expect(p.storeComplete(original, identifier: "I"))
        fileSystem.full.store(true, ordering: .relaxed)
        #expect(!p.storeComplete(image(6000, width: 200, seed: 9), identifier: "I"))
        #expect(!p.storeComplete(image(10, seed: 3), identifier: "new"))
        fileSystem.full.store(false, ordering: .relaxed)
        #expect(p.entry(for: "I")?.complete?.data == original.data)
        #expect(p.entry(for: "new") == nil)
        #expect(problems.all.contains(.diskCacheWriteFailed(identifier: "I", error: .file(operation: "write", errno: ENOSPC))))
        // Each refused store is counted in the problems metric.
        #expect(try recorded.expectCounter(PipelineMetricLabels.problems, [("problem", "diskCacheWriteFailed")]).totalValue == 2)
        // No temporary file is left behind.
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: root + "/p")).filter { $0.hasPrefix("%write") }.isEmpty)
    }

    @Test("Global disk limits: other pipelines' least recently used entries go first, then the written pipeline's")
    func pruning() throws {
        configuration.maxCountForAllDiskCaches = 2
        let p1 = try cache("p1"), p2 = try cache("p2")
        // Recent times: the open's background sweep removes entries the wall clock says are expired.
        let start = Date(timeIntervalSinceNow: -60)
        for (offset, name) in ["a", "b", "c"].enumerated() {
            p1.storeComplete(image(10, at: start + Double(offset)), identifier: name)
        }
        #expect(p1.entries.map(\.identifier) == ["c", "b"])
        p2.storeComplete(image(10, at: start + 10), identifier: "z")
        #expect(p1.entries.map(\.identifier) == ["c"])
        #expect(p2.entries.map(\.identifier) == ["z"])
        #expect(configuration.totalCountForAllDiskCaches == 2)
        #expect(!FileManager.default.fileExists(atPath: root + "/p1/a"))
    }

    @Test("An evicted entry's file is kept for the next write or unlinked after the disk lock is released; nothing is left once the cache is released")
    func evictionUnlinksOutsideTheLock() throws {
        configuration.maxCountForAllDiskCaches = 2
        // Room for one 10-byte file kept to be written over (1/64 of the limit).
        configuration.maxBytesForAllDiskCaches = 640
        let fileSystem = LockProbingFileSystem(pool: configuration.diskPool)
        var p1: DiskCache? = try cache("p1", fileSystem: fileSystem)
        let start = Date(timeIntervalSinceNow: -60)
        for (offset, name) in ["a", "b", "c", "d"].enumerated() {
            p1?.storeComplete(image(10, at: start + Double(offset)), identifier: name)
        }
        #expect(p1?.entries.map(\.identifier) == ["d", "c"])
        #expect(!FileManager.default.fileExists(atPath: root + "/p1/a") && !FileManager.default.fileExists(atPath: root + "/p1/b"))
        #expect(p1?.peek(identifier: "c") != nil)
        // One evicted file is kept, under a write file's name, for the next write.
        func writeFiles() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: root + "/p1").filter { $0.hasPrefix(DiskCache.writeFileNamePrefix) }
        }
        #expect(try writeFiles().count == 1)
        // Deleting both entries keeps no more: their files are unlinked, after the lock is released.
        p1?.removeAll()
        #expect(fileSystem.removals.load(ordering: .relaxed) == 2)
        #expect(fileSystem.removalsHoldingLock.load(ordering: .relaxed) == 0)
        #expect(try writeFiles().count == 1)
        p1 = nil
        #expect(try writeFiles().isEmpty)
        #expect(fileSystem.removalsHoldingLock.load(ordering: .relaxed) == 0)
    }

    @Test("A write goes over a deleted entry's file instead of creating one, and its entry holds exactly the new bytes, shorter or longer")
    func deletedFilesAreWrittenOver() throws {
        let p = try cache("p")
        let inode = { (name: String) in POSIXCacheFileSystem().inode(of: self.root + "/p/" + name) }
        #expect(p.storeComplete(image(4000, seed: 1), identifier: "a"))
        let first = try #require(inode("a"))
        p.remove(identifier: "a")
        let shorter = image(100, seed: 2)
        #expect(p.storeComplete(shorter, identifier: "b"))
        #expect(inode("b") == first)
        #expect(p.entry(for: "b")?.complete?.data == shorter.data)
        #expect((try FileManager.default.attributesOfItem(atPath: root + "/p/b")[.size] as? Int) == 100)
        p.remove(identifier: "b")
        let longer = image(9000, seed: 3)
        #expect(p.storeComplete(longer, identifier: "c"))
        #expect(inode("c") == first)
        #expect(p.entry(for: "c")?.complete?.data == longer.data)
        #expect(problems.all.isEmpty)
    }

    @Test("Scenario 43: an entry over 1/6 of the disk limit is refused and reported; ratio 0 lifts the cap")
    func perEntryCap() throws {
        configuration.maxBytesForAllDiskCaches = 6000
        let p = try cache("p")
        #expect(!p.storeComplete(image(2000), identifier: "big"))
        #expect(problems.all.contains(.imageTooLargeToStoreInDiskCache(identifier: "big", bytes: 2000)))
        configuration.maxRatioSizeOfCacheEntry = 0
        #expect(p.storeComplete(image(2000), identifier: "big"))
    }

    @Test("TTL: an expired entry is deleted on read")
    func timeToLive() throws {
        let p = try cache("p")
        // Real time: the background sweep after opening also removes entries expired by the wall clock.
        let start = Date()
        p.storeComplete(image(10, ttl: 10, at: start), identifier: "I")
        #expect(p.entry(for: "I", now: start + 5) != nil)
        #expect(p.entry(for: "I", now: start + 16) == nil)
        #expect(p.totalCount == 0)
    }

    @Test("Partials: kept with validators for resuming, shown with progress, evicted by a complete image")
    func partials() throws {
        let p = try cache("p")
        let partial = PartialImageData(data: Data(count: 300), url: URL(string: "http://t/a")!,
                                       dimensions: PixelSize(width: 100, height: 100), expectedByteCount: 1000,
                                       lastModified: "Wed, 15 Nov 1995 04:58:08 GMT", entityTag: "\"v1\"")
        #expect(p.storePartial(partial, identifier: "I"))
        let read = try #require(p.entry(for: "I")?.partial)
        #expect(read.lastModified == partial.lastModified && read.entityTag == "\"v1\"" && read.expectedByteCount == 1000)
        #expect(p.entries.first?.progress == 0.3 && p.entries.first?.isPartial == true)
        #expect(FileManager.default.fileExists(atPath: root + "/p/I%tmp"))
        p.storeComplete(image(50), identifier: "I")
        #expect(p.entry(for: "I")?.partial == nil)
        #expect(!FileManager.default.fileExists(atPath: root + "/p/I%tmp"))
    }

    @Test("A deleted entry's file kept to be written over is made young: another process opening the directory leaves it, and the next write goes over it")
    func keptFileSurvivesAnotherProcessSweep() async throws {
        let p = try cache("p")
        #expect(p.storeComplete(image(300, seed: 4), identifier: "old"))
        let inode = try #require(POSIXCacheFileSystem().inode(of: root + "/p/old"))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: root + "/p/old")
        p.remove(identifier: "old")
        let kept = try #require(try FileManager.default.contentsOfDirectory(atPath: root + "/p")
            .first { $0.hasPrefix(DiskCache.writeFileNamePrefix) })
        // Another process: its own configuration and disk lock, the same directory. Its sweep removes a stray
        // file and, in the same batch, decides on the kept one.
        try Data(count: 10).write(to: URL(fileURLWithPath: root + "/p/stray"))
        let otherProcess = GlobalConfiguration()
        let other = try DiskCache(directory: root + "/p", owner: "p", pool: otherProcess.diskPool)
        for _ in 0..<200 where FileManager.default.fileExists(atPath: root + "/p/stray") {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(!FileManager.default.fileExists(atPath: root + "/p/stray"))
        #expect(FileManager.default.fileExists(atPath: root + "/p/" + kept))
        withExtendedLifetime(other) {}
        let new = image(200, seed: 6)
        #expect(p.storeComplete(new, identifier: "new"))
        #expect(POSIXCacheFileSystem().inode(of: root + "/p/new") == inode)
        #expect(p.entry(for: "new")?.complete?.data == new.data)
        #expect(problems.all.isEmpty)
    }

    @Test("Opening removes what crashed writes left behind, without listing the directory on the open path; another process's write in progress stays")
    func orphans() async throws {
        try FileManager.default.createDirectory(atPath: root + "/p", withIntermediateDirectories: true)
        // An hour-old write file is a crash's leftover; a fresh one may be another process's write under way.
        try Data(count: 10).write(to: URL(fileURLWithPath: root + "/p/%write-123"))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)],
                                              ofItemAtPath: root + "/p/%write-123")
        try Data(count: 10).write(to: URL(fileURLWithPath: root + "/p/%write-456"))
        try Data(count: 10).write(to: URL(fileURLWithPath: root + "/p/stray"))
        let p = try cache("p")
        p.storeComplete(image(10), identifier: "kept")
        for _ in 0..<200 where FileManager.default.fileExists(atPath: root + "/p/%write-123")
            || FileManager.default.fileExists(atPath: root + "/p/stray") {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(!FileManager.default.fileExists(atPath: root + "/p/%write-123"))
        #expect(!FileManager.default.fileExists(atPath: root + "/p/stray"))
        #expect(FileManager.default.fileExists(atPath: root + "/p/%write-456"))
        #expect(p.entry(for: "kept") != nil)
    }
}
