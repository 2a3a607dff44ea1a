import ArgumentParser
import Foundation
import ImagePipelineKit

/// `sample-cli cache-torture`: the child process of the crash-safety test (hidden from `--help`).
///
/// Without `--verify` it stores, overwrites, reads and removes self-describing entries in two pipelines
/// forever, so a parent can SIGKILL it at any moment. With `--verify` it reopens the same caches and checks
/// that no entry returns bytes other than what was stored, that the totals match the files, and that the
/// limits hold; it prints one JSON line and exits 0 when all is well.
struct CacheTortureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache-torture", abstract: "Crash-safety workload for the disk cache (used by the tests).",
        shouldDisplay: false)

    @Argument(help: "Cache root directory.")
    var directory: String

    @Option(help: "Random seed of the workload.")
    var seed: UInt64 = 1

    @Flag(help: "Check the caches instead of writing to them.")
    var verify = false

    static let maxBytes = 512 << 10
    static let maxCount = 40

    mutating func run() throws {
        let configuration = GlobalConfiguration()
        configuration.maxBytesForAllDiskCaches = Self.maxBytes
        configuration.maxCountForAllDiskCaches = Self.maxCount
        configuration.maxRatioSizeOfCacheEntry = 0
        let problems = ProblemCounter()
        configuration.problemObserver = problems
        let root = URL(fileURLWithPath: directory)
        let pipelines = try ["t1", "t2"].map { try ImagePipeline(identifier: $0, configuration: configuration, cacheRoot: root) }
        let caches = pipelines.compactMap(\.diskCache)
        guard caches.count == 2 else { throw CommandFailure("cannot open the disk caches under \(directory)") }
        if verify {
            try check(caches, configuration: configuration, problems: problems)
        } else {
            torture(caches)
        }
    }

    private func torture(_ caches: [DiskCache]) -> Never {
        var random = SeededGenerator(seed: seed)
        while true {
            let cache = caches[Int(random.next() % 2)]
            let identifier = "id-\(random.next() % 60)"
            switch random.next() % 10 {
            case 0...5:
                let payload = Payload.make(identifier: identifier, version: UInt32(truncatingIfNeeded: random.next()),
                                           size: 100 + Int(random.next() % 40_000))
                cache.storeComplete(CachedImageData(data: payload, url: URL(string: "http://t/\(identifier)")!,
                                                    dimensions: PixelSize(width: 10, height: 10)),
                                    identifier: identifier, forced: true)
            case 6:
                let payload = Payload.make(identifier: identifier, version: 0, size: 100 + Int(random.next() % 10_000))
                cache.storePartial(PartialImageData(data: payload, url: URL(string: "http://t/\(identifier)")!,
                                                    dimensions: PixelSize(width: 20, height: 20), expectedByteCount: 1 << 20),
                                   identifier: identifier)
            case 7:
                cache.remove(identifier: identifier)
            default:
                if let entry = cache.entry(for: identifier) {
                    for data in [entry.complete?.data, entry.partial?.data].compactMap({ $0 })
                    where !Payload.isValid(data, identifier: identifier) {
                        FileHandle.standardError.write(Data("torture: read bytes that were never stored for \(identifier.terminalSafe)\n".utf8))
                        Foundation.exit(3)
                    }
                }
            }
        }
    }

    private func check(_ caches: [DiskCache], configuration: GlobalConfiguration, problems: ProblemCounter) throws {
        var wrong: [String] = []
        var entries = 0
        for cache in caches {
            for identifier in Set(cache.entries.map(\.identifier)) {
                guard let entry = cache.entry(for: identifier) else { continue }   // corrupt: removed, reported
                for data in [entry.complete?.data, entry.partial?.data].compactMap({ $0 }) {
                    entries += 1
                    if !Payload.isValid(data, identifier: identifier) { wrong.append(identifier) }
                }
            }
        }
        // Let the background orphan sweep finish, then compare the totals with the files really there.
        var filesBytes = 0, filesCount = 0
        for _ in 0..<200 {
            (filesBytes, filesCount) = Self.files(in: caches.map(\.directory))
            if filesCount == configuration.totalCountForAllDiskCaches { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        let totals = (bytes: configuration.totalBytesForAllDiskCaches, count: configuration.totalCountForAllDiskCaches)
        let ok = wrong.isEmpty && totals.bytes == filesBytes && totals.count == filesCount
            && totals.bytes <= Self.maxBytes && totals.count <= Self.maxCount
        let report: [String: Any] = [
            "ok": ok, "entries": entries, "wrongBytes": wrong, "corruptDetected": problems.count,
            "totalBytes": totals.bytes, "filesBytes": filesBytes, "totalCount": totals.count, "filesCount": filesCount,
        ]
        let json = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys])
        print(String(decoding: json, as: UTF8.self))
        if !ok { throw ExitCode(1) }
    }

    /// Bytes and number of entry files (not the index, not temporary writes) in `directories`.
    private static func files(in directories: [String]) -> (Int, Int) {
        var bytes = 0, count = 0
        for directory in directories {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            where !name.hasPrefix("%index") && !name.hasPrefix("%write") {
                let size = (try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size] as? Int) ?? 0
                bytes += size
                count += 1
            }
        }
        return (bytes, count)
    }
}

/// Self-describing bytes: a header naming the identifier and version, then a pattern derived from both, so
/// any bytes read back can be checked without knowing what was stored last.
private enum Payload {
    static func make(identifier: String, version: UInt32, size: Int) -> Data {
        var data = Data("IPKT".utf8)
        let name = Array(identifier.utf8)
        data.append(UInt8(name.count))
        data.append(contentsOf: name)
        withUnsafeBytes(of: version.littleEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(size).littleEndian) { data.append(contentsOf: $0) }
        let start = UInt32(truncatingIfNeeded: identifier.utf8.reduce(0) { $0 &* 31 &+ Int($1) }) ^ version
        data.append(contentsOf: (0..<size).map { UInt8(truncatingIfNeeded: start &+ UInt32($0) &* 7) })
        return data
    }

    static func isValid(_ data: Data, identifier: String) -> Bool {
        let bytes = [UInt8](data)
        let name = Array(identifier.utf8)
        let header = 4 + 1 + name.count + 8
        guard bytes.count >= header, bytes.starts(with: Array("IPKT".utf8)), Int(bytes[4]) == name.count,
              Array(bytes[5..<(5 + name.count)]) == name else { return false }
        let version = bytes[(5 + name.count)..<(9 + name.count)].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let size = bytes[(9 + name.count)..<header].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return make(identifier: identifier, version: version, size: Int(size)) == data
    }
}

/// Counts problems (corrupt entries found and removed are allowed; they are never returned).
private final class ProblemCounter: ProblemObserver, @unchecked Sendable {
    // @unchecked: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value = 0
    func problemWasEncountered(_ problem: ImagePipelineProblem) { lock.withLock { value += 1 } }
    var count: Int { lock.withLock { value } }
}

/// A small deterministic generator (SplitMix64) so a failing seed can be replayed.
private struct SeededGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
