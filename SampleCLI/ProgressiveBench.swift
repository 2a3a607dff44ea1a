import ArgumentParser
import Foundation
import ImagePipelineKit

/// `sample-cli bench progressive`: what progressive loading costs in CPU, for the first preview and for the
/// previews plus the final image.
struct ProgressiveBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "progressive",
        abstract: "Thread-CPU cost of progressive previews: the first preview, and previews plus the final image.",
        discussion: """
            first_preview: feed the first --preview-fraction of the file to an incremental session that knows \
            its target (--target px, fit) and render once, as a fetch that shows a preview of a thumbnail \
            does; compare with a 1/8 decode of the same truncated file. \
            all: feed the whole file in --chunk-byte pieces, rendering at most --previews previews (throttled \
            by bytes, as a UI throttles by time) and the final image at full size; compare with one full \
            decode. Medians of --iterations runs.
            """
    )

    @Argument(help: "A progressive JPEG.")
    var file: String

    @Option(help: "Timed runs.")
    var iterations = 5

    @Option(help: "Bytes per append.")
    var chunkBytes = 16 * 1024

    @Option(help: "Most previews rendered before the final image.")
    var previews = 4

    @Option(help: "Share of the file fed before the first preview.")
    var previewFraction = 0.1

    @Option(help: ArgumentHelp("Target of the first-preview measurement (fit).", valueName: "PIXELS"))
    var target = 500

    @OptionGroup var output: JSONOutput

    mutating func run() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        let name = (file as NSString).lastPathComponent
        let decoder = try CodecCatalogue.shared.codec(for: .jpeg).map(\.decoder) ?? {
            throw CommandFailure("no JPEG codec registered")
        }()
        let prefix = data.prefix(Int(Double(data.count) * previewFraction))
        let sizing = TargetSizing(dimensions: PixelSize(width: target, height: target), contentMode: .fit)
        var previewSize = PixelSize(width: 0, height: 0)
        let first = try DecodeBench.medianMilliseconds(iterations: iterations) {
            let session = decoder.makeSession(
                configuration: DecoderConfiguration(preferredSizing: sizing), expectedByteCount: data.count)
            _ = try session.append(prefix)
            previewSize = try session.render(.anyProgress, target: sizing)?.dimensions ?? PixelSize(width: 0, height: 0)
        }
        output.say("\(name)\tfirst_preview\tbytes=\(prefix.count)\tout=\(previewSize)\tmedian_ms=\(String(format: "%.3f", first))")
        if let prefixFile = ProcessInfo.processInfo.environment["IPK_WRITE_PREFIX"] {
            try prefix.write(to: URL(fileURLWithPath: prefixFile))
        }

        var rendered = 0
        let all = try DecodeBench.medianMilliseconds(iterations: iterations) {
            let session = decoder.makeSession(configuration: .default, expectedByteCount: data.count)
            rendered = 0
            var nextPreviewAt = data.count / (previews + 1)
            var offset = 0
            while offset < data.count {
                let end = min(offset + chunkBytes, data.count)
                let progress = try session.append(data[offset..<end])
                offset = end
                if progress == .didLoadFrame, rendered < previews, offset >= nextPreviewAt,
                   try session.render(.anyProgress, target: .original) != nil {
                    rendered += 1
                    nextPreviewAt = offset + data.count / (previews + 1)
                }
            }
            _ = try session.finish()
            _ = try session.render(.completeImage, target: .original)
        }
        output.say("\(name)\tall\tpreviews=\(rendered)\tmedian_ms=\(String(format: "%.3f", all))")
        try output.write(object: [
            "benchmark": "progressive", "file": name,
            "firstPreview": ["bytes": prefix.count, "width": previewSize.width, "height": previewSize.height, "medianMs": first],
            "all": ["previews": rendered, "medianMs": all],
        ])
    }
}
