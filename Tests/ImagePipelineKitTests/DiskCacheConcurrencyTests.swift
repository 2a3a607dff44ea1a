import Foundation
import Synchronization
import PipelineLocking
import Testing
import TestSupport
@testable import ImagePipelineKit

/// A file system whose writes stop, after creating their file, until the test lets them go: a write caught in
/// the middle of writing its file.
final class HeldWriteFileSystem: ForwardingCacheFileSystem, @unchecked Sendable {
    // @unchecked: the semaphores and the atomic are thread-safe.
    private let posix = POSIXCacheFileSystem()
    let holds = Atomic<Bool>(false)
    let writeStarted = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)

    func write(_ data: Data, to path: String) throws(DiskCacheError) {
        try posix.write(data, to: path)
        guard holds.load(ordering: .relaxed) else { return }
        writeStarted.signal()
        release.wait()
    }
}

@Suite("Disk cache: a write's file I/O does not hold the process's disk lock")
struct DiskCacheConcurrencyTests: DiskCacheFixtures {
    let configuration = GlobalConfiguration()
    let root: String

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-disk-conc-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    @Test("Reads of any disk cache go on while another write is flushing its file")
    func readsDuringWrite() async throws {
        let held = HeldWriteFileSystem()
        let writer = try DiskCache(directory: root + "/w", owner: "w", pool: configuration.diskPool, fileSystem: held)
        let reader = try DiskCache(directory: root + "/r", owner: "r", pool: configuration.diskPool)
        let stored = image(4000, width: 50, seed: 2)
        #expect(reader.storeComplete(stored, identifier: "R"))
        held.holds.store(true, ordering: .relaxed)
        let write = Task { try await offloaded { writer.storeComplete(self.image(5000, width: 60, seed: 1), identifier: "W") } }
        try await offloaded { held.writeStarted.wait() }
        // The write is stopped inside its file I/O. A read that needed the disk lock held by the write would
        // wait for the write's release, which comes only after this wait: it would time out here.
        let readBack = Locked<Data?>(nil)
        let readDone = DispatchSemaphore(value: 0)
        DispatchQueue(label: "disk-conc.read").async {
            readBack.withLock { $0 = reader.entry(for: "R")?.complete?.data }
            readDone.signal()
        }
        let readFinished = try await offloaded { readDone.wait(timeout: .now() + 20) == .success }
        held.release.signal()
        #expect(readFinished)
        if !readFinished { try await offloaded { readDone.wait() } }
        #expect(isSameBytes(readBack.withLock { $0 }, stored.data))
        #expect(try await write.value)
        #expect(writer.entry(for: "W")?.complete?.dimensions.width == 60)
    }

    @Test("A store that lands while another is writing is not overwritten by the smaller image")
    func raceDecidedAgainAtRename() async throws {
        let held = HeldWriteFileSystem()
        let cache = try DiskCache(directory: root + "/c", owner: "c", pool: configuration.diskPool, fileSystem: held)
        let small = image(3000, width: 40, seed: 3)
        let large = image(6000, width: 80, seed: 4)
        held.holds.store(true, ordering: .relaxed)
        let smallWrite = Task { try await offloaded { cache.storeComplete(small, identifier: "I") } }
        try await offloaded { held.writeStarted.wait() }
        held.holds.store(false, ordering: .relaxed)
        // The larger image lands while the smaller one is still being written (with the write holding the
        // disk lock, it could not: the wait below would time out).
        let largeStored = Locked(false)
        let largeDone = DispatchSemaphore(value: 0)
        DispatchQueue(label: "disk-conc.large").async {
            largeStored.withLock { $0 = cache.storeComplete(large, identifier: "I") }
            largeDone.signal()
        }
        let largeFinished = try await offloaded { largeDone.wait(timeout: .now() + 20) == .success }
        held.release.signal()
        #expect(largeFinished)
        if !largeFinished { try await offloaded { largeDone.wait() } }
        #expect(largeStored.withLock { $0 })
        // Asked again before its rename, TIP's rule refuses the smaller image over the larger one.
        #expect(try await smallWrite.value == false)
        #expect(isSameBytes(cache.entry(for: "I")?.complete?.data, large.data))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: root + "/c").filter { $0.hasPrefix("%write-") }
        #expect(leftovers.isEmpty)
        #expect(configuration.totalBytesForAllDiskCaches == large.data.count)
    }
}
