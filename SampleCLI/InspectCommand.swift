import ArgumentParser
import Foundation
import ImagePipelineKit

/// `sample-cli inspect`: lists what the pipelines under a cache directory hold on disk.
struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "List the disk cache entries of pipelines: identifier, URL, dimensions, bytes, complete or partial.",
        discussion: """
            Without PIPELINE, lists every pipeline found under --cache-dir (default: $XDG_CACHE_HOME/\
            ImagePipelineKit, else ~/.cache/ImagePipelineKit), including pipelines no process has open. \
            Partial entries (interrupted downloads kept for resuming) show their progress. Control \
            characters in identifiers and URLs print escaped (\\n, \\u{1B}). With --json, \
            prints one object per entry: {pipeline, identifier, url, width, height, bytes, complete, \
            progress}. Exits 1 when a pipeline or its disk cache cannot be opened, saying why on stderr.
            """
    )

    @Argument(help: "The pipelines to inspect; default: all under the cache directory.")
    var pipelines: [String] = []

    @Option(help: ArgumentHelp("The directory holding the pipelines' caches.", valueName: "DIR"))
    var cacheDir: String?

    @OptionGroup var output: JSONOutput

    func run() throws {
        let root = cacheDir.map { URL(fileURLWithPath: $0) } ?? ImagePipeline.defaultCacheRoot
        let names = pipelines.isEmpty ? ImagePipeline.knownIdentifiers(cacheRoot: root).sorted() : pipelines
        var failed = false
        var lines: [String] = []
        for name in names {
            let inspection: ImagePipelineInspection
            do {
                let pipeline = try ImagePipeline(identifier: name, configuration: GlobalConfiguration(), cacheRoot: root)
                // A cache that cannot be opened must not read as an empty one.
                if let reason = pipeline.diskCacheUnavailability {
                    FileHandle.standardError.write(Data("\(name.terminalSafe): disk cache unavailable: \(String(describing: reason).terminalSafe)\n".utf8))
                    failed = true
                    continue
                }
                inspection = pipeline.inspect()
            } catch {
                FileHandle.standardError.write(Data("\(name.terminalSafe): \(String(describing: error).terminalSafe)\n".utf8))
                failed = true
                continue
            }
            let rows = inspection.completeDiskEntries.map { ($0, true) } + inspection.partialDiskEntries.map { ($0, false) }
            lines += rows.map { Self.jsonLine(pipeline: name, entry: $0.0, complete: $0.1) }
            output.say("\(name.terminalSafe): \(inspection.completeDiskEntries.count) complete, \(inspection.partialDiskEntries.count) partial, \(inspection.onDiskBytesUsed) bytes")
            for (entry, complete) in rows.sorted(by: { $0.0.identifier < $1.0.identifier }) {
                let state = complete ? "complete" : String(format: "partial %.0f%%", entry.progress * 100)
                output.say("  \(entry.identifier.terminalSafe)  \(entry.dimensions)  \(entry.bytesUsed) bytes  \(state)  \(entry.url?.absoluteString.terminalSafe ?? "-")")
            }
        }
        try output.write(lines: lines)
        if failed { throw ExitCode(1) }
    }

    static func jsonLine(pipeline: String, entry: ImagePipelineInspection.Entry, complete: Bool) -> String {
        let object: [String: Any] = [
            "pipeline": pipeline, "identifier": entry.identifier, "url": entry.url?.absoluteString ?? NSNull(),
            "width": entry.dimensions.width, "height": entry.dimensions.height, "bytes": entry.bytesUsed,
            "complete": complete, "progress": entry.progress,
        ]
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }
}
