import Foundation
import Logging
import PipelineLocking

/// The service's log lines, in swift-log's `StreamLogHandler` format (`TIME LEVEL LABEL: KEY=VALUE… [SOURCE]
/// MESSAGE`, keys sorted), to a ``BufferedStandardError``.
///
/// A line is logged for every request, on the path of every answer, so it is made with little work: the
/// logger's own metadata is merged only when it has some, and the line is built in one string.
struct LineLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let output: BufferedStandardError

    init(label: String, logLevel: Logger.Level, output: BufferedStandardError) {
        self.label = label
        self.logLevel = logLevel
        self.output = output
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty { all.merge(provided) { $1 } }
        if let explicit = event.metadata, !explicit.isEmpty {
            if all.isEmpty { all = explicit } else { all.merge(explicit) { $1 } }
        }
        if let error = event.error {
            all["error.message"] = "\(error)"
            all["error.type"] = .string(String(reflecting: type(of: error)))
        }
        var line = Self.timestamp()
        line += " "
        line += event.level.rawValue
        if !label.isEmpty { line += " " + label }
        line += ":"
        for key in all.keys.sorted() {
            line += " "
            line += key
            line += "="
            line += all[key]!.description
        }
        line += " ["
        line += event.source
        line += "] "
        line += event.message.description
        line += "\n"
        output.write(line)
    }

    /// The last second's timestamp: lines come thousands a second, and formatting the time is a good part of one.
    private static let lastTimestamp = Locked<(second: Int, text: String)>((-1, ""))

    /// Local time as `2026-11-29T03:50:59+0000`.
    private static func timestamp() -> String {
        var now = time(nil)
        if let text = lastTimestamp.withLock({ $0.second == now ? $0.text : nil }) { return text }
        var local = tm()
        guard localtime_r(&now, &local) != nil else { return "<unknown>" }
        let text = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 32) { buffer in
            let count = strftime(buffer.baseAddress!, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local)
            return String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress!, count: count), as: UTF8.self)
        }
        lastTimestamp.withLock { $0 = (now, text) }
        return text
    }
}
