import Logging

/// A swift-log handler that keeps each message in memory with its metadata flattened into the text
/// (`message key=value …`, keys sorted), for tests of what a component logs.
public struct CapturingLogHandler: LogHandler {
    public let messages: Recorded<(Logger.Level, String)>
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .trace

    public init(messages: Recorded<(Logger.Level, String)>) {
        self.messages = messages
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = all.keys.sorted().map { "\($0)=\(all[$0]!)" }
        messages.append((event.level, ([event.message.description] + fields).joined(separator: " ")))
    }
}
