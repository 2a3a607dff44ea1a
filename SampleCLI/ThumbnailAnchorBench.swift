import ArgumentParser
import Foundation
import ImagePipelineKit
import PipelineLocking

/// The floor an image service is measured against: the same thumbnails made with no HTTP, no cache and no
/// scheduling, from files already in memory, on a few threads.
struct ThumbnailAnchorBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "thumbnail-anchor",
        abstract: "Images/s of decoding JPEGs at a covering size, cutting the centre square and encoding it (from memory).",
        discussion: """
            Each file is read into memory first. Then --threads threads take the files in turn, each decoded with \
            the DCT scaling that covers --size x --size (as the pipeline decodes), cut to its centre square and \
            encoded as JPEG at --quality. The last line is `images/s N` (scripts/bench-service reads it).
            """
    )

    @Argument(help: "JPEG files.")
    var files: [String]

    @Option(help: "Threads making thumbnails at once.")
    var threads = 2

    @Option(help: ArgumentHelp("Side of the square thumbnail.", valueName: "PIXELS"))
    var size = 256

    @Option(help: "JPEG quality of the thumbnails, 1-100.")
    var quality = 80

    @Option(help: "Times through the whole list.")
    var rounds = 1

    @OptionGroup var output: JSONOutput

    func validate() throws {
        guard threads > 0, size > 0, (1...100).contains(quality), rounds > 0, !files.isEmpty else {
            throw ValidationError("--threads, --size and --rounds must be positive, --quality 1...100, and files given")
        }
    }

    func run() throws {
        let images = try files.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        let box = PixelSize(width: size, height: size)
        let target = TargetSizing(dimensions: box, contentMode: .fill)
        let next = Locked(0)
        let failures = Locked<[String]>([])
        let total = images.count * rounds
        let quality = Double(quality) / 100
        let started = ContinuousClock.now
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            while true {
                let index = next.withLock { value -> Int in defer { value += 1 }; return value }
                guard index < total else { return }
                do {
                    let scaled = try CodecCatalogue.shared.decode(images[index % images.count], target: target).container.bitmap
                    let cut = try scaled.cropped(x: (scaled.width - box.width) / 2, y: (scaled.height - box.height) / 2, size: box)
                    _ = try JPEGEncoder().encode(ImageContainer(bitmap: cut), options: [], quality: quality)
                } catch {
                    failures.withLock { $0.append("\(files[index % images.count]): \(error)") }
                }
            }
        }
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        let failed = failures.withLock { $0 }
        guard failed.isEmpty else { throw BenchError("\(failed.count) thumbnails failed, first: \(failed[0])") }
        output.say("thumbnails \(total) threads \(threads) seconds \(String(format: "%.3f", seconds))")
        output.say("images/s \(String(format: "%.1f", Double(total) / seconds))")
        try output.write(object: ["benchmark": "thumbnail-anchor", "thumbnails": total, "threads": threads, "seconds": seconds,
                                  "imagesPerSecond": Double(total) / seconds, "size": size, "quality": quality])
    }
}
