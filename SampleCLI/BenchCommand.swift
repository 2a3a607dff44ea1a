import ArgumentParser
import Foundation
import ImagePipelineKit
#if canImport(Glibc)
import Glibc
#endif

/// `sample-cli bench`: measurements meant to be read as ratios to anchors run beside them
/// (`scripts/bench-decode.sh` does that).
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmarks, each beside an anchor measured in the same run (make bench, make bench-cache, scripts/bench-fetch.sh).",
        subcommands: [DecodeBench.self, ProgressiveBench.self, CacheBench.self, FetchBench.self, CoalesceBench.self,
                      PipelineBench.self, TierBench.self, ThumbnailAnchorBench.self]
    )
}

/// Median thread-CPU time of decoding files, full size and at a target, through the codec catalogue.
struct DecodeBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Median thread-CPU milliseconds to decode each file (data already in memory).",
        discussion: """
            Thread CPU time (CLOCK_THREAD_CPUTIME_ID), like the C anchors in ../shared/tools/anchors, so \
            other processes on the machine do not skew it. Each file is decoded once to warm up, then \
            --iterations times; bitmaps are released between iterations so the buffer pool is exercised \
            as in an app.
            """
    )

    @Argument(help: "Image files.")
    var files: [String]

    @Option(help: "Timed decodes per file and size.")
    var iterations = 11

    @Option(help: ArgumentHelp("Also decode at this target (fit); 0 to skip.", valueName: "PIXELS"))
    var target = 256

    @OptionGroup var output: JSONOutput

    mutating func run() throws {
        var rows: [[String: Any]] = []
        for file in files {
            let data = try Data(contentsOf: URL(fileURLWithPath: file))
            let name = (file as NSString).lastPathComponent
            var sizings: [(String, TargetSizing)] = [("full", .original)]
            if target > 0 {
                sizings.append(("fit\(target)", TargetSizing(dimensions: PixelSize(width: target, height: target), contentMode: .fit)))
            }
            for (label, sizing) in sizings {
                var output = PixelSize(width: 0, height: 0)
                let median = try Self.medianMilliseconds(iterations: iterations) {
                    output = try CodecCatalogue.shared.decode(data, target: sizing).container.dimensions
                }
                self.output.say("\(name)\tours\t\(label)\tout=\(output)\tmedian_ms=\(String(format: "%.3f", median))")
                rows.append(["file": name, "sizing": label, "width": output.width, "height": output.height, "medianMs": median])
            }
        }
        try self.output.write(object: ["benchmark": "decode", "rows": rows])
    }

    static func medianMilliseconds(iterations: Int, _ body: () throws -> Void) throws -> Double {
        try body()
        var samples: [Double] = []
        for _ in 0..<max(1, iterations) {
            let start = threadCPUSeconds()
            try body()
            samples.append((threadCPUSeconds() - start) * 1000)
        }
        return Timing.median(samples)
    }

    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
    }
}
