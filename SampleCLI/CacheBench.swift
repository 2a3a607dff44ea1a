import ArgumentParser
import Foundation
import ImagePipelineKit
import Synchronization
#if canImport(Glibc)
import Glibc
import PipelineLocking
#endif

/// `sample-cli bench cache`: rendered, memory and disk cache lookups, each beside its anchor (the least any
/// cache of that kind can do: a locked dictionary, or a plain open-read-close of the file) measured in
/// the same process, the same way, at the same moment.
struct CacheBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "Rendered, memory, disk and image-table hits against a bare dictionary and POSIX reads (B1-B4).",
        discussion: """
            Every lookup is timed on its own with CLOCK_MONOTONIC (the cost of reading the clock, measured \
            first, is subtracted); p50 and p99 are over all lookups of a round, and each figure printed is \
            the median over --rounds rounds. The anchor of each row runs in the same round, interleaved, so \
            the ratio holds even on a busy machine. Rows:
              rendered-hit      10k identifiers, random keys   vs Dictionary<String, Bitmap> + Mutex
              rendered-hot      64 identifiers (one screen)    vs the same dictionary
              memory-hit        10k identifiers, random keys   vs the same dictionary
              disk-hit          200 KiB entries                vs open + read + close of the same files
              disk-miss         absent identifier              vs stat() of an absent file
              disk-open         open a 100k-entry cache, then its first hit (wall time; no anchor: target < 100 ms)
              table-hit         256 images of 256x256 in one mapped ImageTable, random keys: a view of the
                                mapped pixels, released after each hit    vs the same dictionary (B4: <= 1 us)
            The 100k-entry cache is built once under --work (a few seconds) and \
            reused by later runs.
            """
    )

    @Option(help: "Rounds; each figure printed is the median over them.")
    var rounds = 5

    @Option(help: "Lookups per round for the in-memory rows.")
    var lookups = 200_000

    @Option(help: "Directory for the disk fixtures.")
    var work = ".build-bench/cache"

    @Option(help: ArgumentHelp("Entries of the cache opened by the disk-open row; 0 skips it.", valueName: "N"))
    var openEntries = 100_000

    @OptionGroup var output: JSONOutput

    /// Extra lines printed under the table.
    private var loopLines: [String] = []

    mutating func run() throws {
        let overhead = Timing.clockOverhead()
        output.say("clock_overhead_ns=\(String(format: "%.1f", overhead))")
        var table: [BenchRow] = []
        table += try inMemoryRows(overhead: overhead)
        table += try diskRows(overhead: overhead)
        table.append(try tableRow(overhead: overhead))
        if openEntries > 0 { table.append(try openRow()) }
        output.say("")
        output.say(BenchRow.header)
        table.forEach { output.say($0.line) }
        loopLines.forEach { output.say($0) }
        try output.write(object: ["benchmark": "cache", "clockOverheadNs": overhead, "rows": table.map(\.json), "notes": loopLines])
    }

    // MARK: - Rendered and memory caches

    private mutating func inMemoryRows(overhead: Double) throws -> [BenchRow] {
        let configuration = GlobalConfiguration()
        configuration.maxCountForAllRenderedCaches = 0
        configuration.maxCountForAllMemoryCaches = 0
        configuration.maxBytesForAllRenderedCaches = 1 << 30
        configuration.maxBytesForAllMemoryCaches = 1 << 30
        configuration.maxRatioSizeOfCacheEntry = 0
        let root = URL(fileURLWithPath: work).appendingPathComponent("memory-\(getpid())")
        defer { try? FileManager.default.removeItem(at: root) }
        let pipeline = try ImagePipeline(identifier: "bench-memory-\(getpid())", configuration: configuration, cacheRoot: root)

        let count = 10_000
        let side = 32
        let target = TargetSizing(dimensions: PixelSize(width: side, height: side), contentMode: .fit)
        let identifiers = (0..<count).map { "https://img.example.com/photos/\($0)/original.jpg" }
        var bitmaps: [String: Bitmap] = [:]
        for identifier in identifiers {
            let bitmap = try Bitmap(width: side, height: side) { pixels, stride in memset(pixels, 7, stride * side) }
            bitmaps[identifier] = bitmap
            pipeline.renderedCache.store(
                RenderedImage(image: ImageContainer(bitmap: bitmap), transformerIdentifier: nil,
                              sourceDimensions: PixelSize(width: 1000, height: 1000), isDirty: false),
                identifier: identifier)
            pipeline.memoryCache.storeComplete(
                CachedImageData(data: Data(repeating: 1, count: 1024), url: URL(string: identifier)!,
                                dimensions: PixelSize(width: 1000, height: 1000)),
                identifier: identifier)
        }
        guard pipeline.renderedCache.totalBytes > 0, configuration.totalCountForAllRenderedCaches == count,
              configuration.totalCountForAllMemoryCaches == count
        else { throw BenchError("the caches did not keep all \(count) entries") }

        // The anchor: the least any synchronous cache can do — a dictionary behind a lock.
        let anchor = Locked(bitmaps)
        let random = (0..<lookups).map { _ in identifiers[Int.random(in: 0..<count)] }
        let hot = (0..<lookups).map { _ in identifiers[Int.random(in: 0..<64)] }

        // A hit must hand out the cached bitmap itself, never a copy of its pixels.
        let probe = identifiers[0]
        guard pipeline.renderedCache.image(for: probe, target: target)?.image.bitmap === bitmaps[probe] else {
            throw BenchError("the rendered cache returned a copy, not the cached bitmap")
        }

        func anchorLookup(_ key: String) -> Bool { anchor.withLock { $0[key] } != nil }
        let rendered = try Timing.compare(rounds: rounds, overhead: overhead, keys: random,
                                      ours: { pipeline.renderedCache.image(for: $0, target: target) != nil },
                                      anchor: anchorLookup)
        let renderedHot = try Timing.compare(rounds: rounds, overhead: overhead, keys: hot,
                                         ours: { pipeline.renderedCache.image(for: $0, target: target) != nil },
                                         anchor: anchorLookup)
        let memory = try Timing.compare(rounds: rounds, overhead: overhead, keys: random,
                                    ours: { pipeline.memoryCache.entry(for: $0)?.complete != nil },
                                    anchor: anchorLookup)
        // The anchor program's method too: a mean per call over a loop (no clock read per lookup).
        let renderedLoop = try Timing.loopMean(rounds: rounds, keys: random) { pipeline.renderedCache.image(for: $0, target: target) != nil }
        let anchorLoop = try Timing.loopMean(rounds: rounds, keys: random, anchorLookup)
        loopLines.append(String(format: "rendered-hit loop mean: ours %.1f ns/op, dict+lock %.1f ns/op, ratio %.2fx (thread CPU, %d lookups)",
                                renderedLoop, anchorLoop, renderedLoop / max(anchorLoop, 0.001), random.count))
        return [
            BenchRow(name: "rendered-hit", unit: "ns", result: rendered, anchorName: "dict+lock",
                     target: "p50 < 250 ns, p99 < 1 us, <= 3x"),
            BenchRow(name: "rendered-hot", unit: "ns", result: renderedHot, anchorName: "dict+lock", target: "p50 < 200 ns"),
            BenchRow(name: "memory-hit", unit: "ns", result: memory, anchorName: "dict+lock", target: "-"),
        ]
    }

    // MARK: - Image table

    /// 256 images of 256x256 in an ``ImageTable`` (one mapped file), hit by random keys: each hit returns a
    /// view of the mapped pixels and lets it go (the lease ends), against a dictionary of the same bitmaps.
    private func tableRow(overhead: Double) throws -> BenchRow {
        let side = 256, count = 256
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let path = URL(fileURLWithPath: work).appendingPathComponent("table-\(getpid()).table").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let table: ImageTable
        do {
            table = try ImageTable(path: path, side: side, capacity: count)
        } catch {
            throw BenchError("cannot open the image table at \(path): \(error)")
        }
        let identifiers = (0..<count).map { "https://img.example.com/thumbs/\($0).jpg" }
        var bitmaps: [String: Bitmap] = [:]
        for (index, identifier) in identifiers.enumerated() {
            let bitmap = try Bitmap(width: side, height: side) { pixels, stride in memset(pixels, Int32(index % 251), stride * side) }
            guard table.store(bitmap, identifier: identifier) else { throw BenchError("the table refused \(identifier)") }
            bitmaps[identifier] = bitmap
        }
        // A hit must be a view of the mapped file: two hits see the same bytes, and they are the stored pixels.
        guard let first = table.image(for: identifiers[1]), let second = table.image(for: identifiers[1]),
              first.withUnsafeBytes({ $0.baseAddress }) == second.withUnsafeBytes({ $0.baseAddress }),
              first.pixel(x: 255, y: 255) == bitmaps[identifiers[1]]!.pixel(x: 255, y: 255)
        else { throw BenchError("the image table did not return views of the stored pixels") }
        let anchor = Locked(bitmaps)
        let keys = (0..<lookups).map { _ in identifiers[Int.random(in: 0..<count)] }
        let result = try Timing.compare(rounds: rounds, overhead: overhead, keys: keys,
                                        ours: { table.image(for: $0) != nil },
                                        anchor: { key in anchor.withLock { $0[key] } != nil })
        return BenchRow(name: "table-hit", unit: "ns", result: result, anchorName: "dict+lock",
                        target: "<= 1 us, a view (B4)")
    }

    // MARK: - Disk cache

    private func diskRows(overhead: Double) throws -> [BenchRow] {
        let configuration = GlobalConfiguration()
        configuration.maxBytesForAllDiskCaches = 1 << 30
        configuration.maxCountForAllDiskCaches = 0
        configuration.maxRatioSizeOfCacheEntry = 0
        let root = URL(fileURLWithPath: work).appendingPathComponent("disk-\(getpid())")
        defer { try? FileManager.default.removeItem(at: root) }
        let pipeline = try ImagePipeline(identifier: "bench-disk", configuration: configuration, cacheRoot: root)
        guard let disk = pipeline.diskCache else { throw BenchError("no disk cache under \(root.path)") }

        let count = 64
        let identifiers = (0..<count).map { "https://img.example.com/photos/\($0)/200k.jpg" }
        var rng = SystemRandomNumberGenerator()
        for identifier in identifiers {
            let bytes = Data((0..<(200 * 1024)).map { _ in UInt8.random(in: 0...255, using: &rng) })
            disk.storeComplete(CachedImageData(data: bytes, url: URL(string: identifier)!,
                                               dimensions: PixelSize(width: 1000, height: 800), timeToLive: 86_400),
                               identifier: identifier)
        }
        guard disk.totalCount == count else { throw BenchError("the disk cache kept \(disk.totalCount) of \(count)") }
        // The anchor reads the very files the cache wrote (names from the directory, index excluded).
        let files = try FileManager.default.contentsOfDirectory(atPath: disk.directory)
            .filter { !$0.hasPrefix("%") }.map { disk.directory + "/" + $0 }
        guard files.count == count else { throw BenchError("expected \(count) files, found \(files.count)") }
        var fileFor: [String: String] = [:]
        for (index, identifier) in identifiers.enumerated() { fileFor[identifier] = files[index] }

        let keys = (0..<4_000).map { _ in identifiers[Int.random(in: 0..<count)] }
        let hit = try Timing.compare(rounds: rounds, overhead: overhead, keys: keys,
                                 ours: { disk.entry(for: $0)?.complete?.data.count == 200 * 1024 },
                                 anchor: { Timing.openReadClose(fileFor[$0]!) == 200 * 1024 })
        let absent = (0..<20_000).map { "https://img.example.com/absent/\($0 % 97).jpg" }
        let missingPath = disk.directory + "/absent-file"
        let miss = try Timing.compare(rounds: rounds, overhead: overhead, keys: absent,
                                  ours: { disk.entry(for: $0) == nil },
                                  anchor: { _ in var info = stat(); return stat(missingPath, &info) != 0 })
        return [
            BenchRow(name: "disk-hit", unit: "us", result: hit, anchorName: "open+read+close", target: "<= 2x"),
            BenchRow(name: "disk-miss", unit: "us", result: miss, anchorName: "stat", target: "<= 2x"),
        ]
    }

    /// Wall time from opening a pipeline whose disk cache holds `openEntries` entries to its first hit.
    private func openRow() throws -> BenchRow {
        let root = URL(fileURLWithPath: work).appendingPathComponent("open-\(openEntries)")
        let identifier = { (index: Int) in "https://img.example.com/photos/\(index)/thumb.jpg" }
        try buildOpenFixture(root: root, identifier: identifier)
        var samples: [Double] = []
        for round in 0..<rounds {
            let configuration = GlobalConfiguration()
            configuration.maxBytesForAllDiskCaches = 1 << 34
            configuration.maxCountForAllDiskCaches = 0
            let probe = identifier((round * 7919) % openEntries)
            let start = Timing.monotonic()
            let pipeline = try ImagePipeline(identifier: "bench-open", configuration: configuration, cacheRoot: root)
            let found = pipeline.diskCache?.entry(for: probe)?.complete != nil
            samples.append((Timing.monotonic() - start) * 1000)
            guard found, configuration.totalCountForAllDiskCaches == openEntries else {
                throw BenchError("the \(openEntries)-entry cache did not open with its entries (rebuild: rm -r \(root.path))")
            }
        }
        return BenchRow(name: "disk-open", unit: "ms", result: Timing.Comparison(ours: .init(p50: Timing.median(samples), p99: samples.max() ?? 0), anchor: nil),
                        anchorName: "-", target: "< 100 ms to first hit")
    }

    /// Writes the open row's fixture once: small entries through the real cache.
    private func buildOpenFixture(root: URL, identifier: (Int) -> String) throws {
        let marker = root.appendingPathComponent("complete")
        guard !FileManager.default.fileExists(atPath: marker.path) else { return }
        try? FileManager.default.removeItem(at: root)
        let configuration = GlobalConfiguration()
        configuration.maxBytesForAllDiskCaches = 1 << 34
        configuration.maxCountForAllDiskCaches = 0
        let pipeline = try ImagePipeline(identifier: "bench-open", configuration: configuration, cacheRoot: root)
        let bytes = Data(repeating: 0xAB, count: 256)
        let start = Timing.monotonic()
        for index in 0..<openEntries {
            pipeline.diskCache?.storeComplete(
                CachedImageData(data: bytes, url: URL(string: identifier(index))!, dimensions: PixelSize(width: 64, height: 64),
                                timeToLive: 365 * 86_400),
                identifier: identifier(index))
        }
        try Data().write(to: marker)
        FileHandle.standardError.write(Data(String(format: "bench: built a %d-entry disk cache in %.1f s\n", openEntries,
                                                   Timing.monotonic() - start).utf8))
    }
}
