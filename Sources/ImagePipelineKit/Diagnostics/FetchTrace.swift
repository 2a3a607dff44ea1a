import Tracing

/// The spans of one fetch (swift-distributed-tracing): `image-pipeline.fetch` from start to end, a child
/// `image-pipeline.source` for each source step (memory, disk, the shared tier, the network…) with the step's
/// result, and children for the decode and the stores. With no tracer bootstrapped and none set on the
/// configuration (``GlobalConfiguration/tracer``), the no-op tracer's spans record nothing.
///
/// Kept by the fetch's metrics recorder, which already hears each source step begin and end, so a source
/// span opens and closes with the step's timing.
struct FetchTrace {
    private let tracer: any Tracer
    private let root: any Span
    private var source: (any Span)?
    private var isFinished = false

    init(tracer: any Tracer, parent: ServiceContext, pipeline: String, identifier: String) {
        self.tracer = tracer
        root = tracer.startSpan("image-pipeline.fetch", context: parent, ofKind: .internal)
        root.attributes["image_pipeline.pipeline"] = pipeline
        root.attributes["image_pipeline.identifier"] = identifier
    }

    /// Opens the span of a source step (closing one still open, which found nothing).
    mutating func beginSource(_ loadSource: ImageLoadSource) {
        endSource(result: "miss")
        let span = tracer.startSpan("image-pipeline.source", context: root.context, ofKind: .internal)
        span.attributes["image_pipeline.source"] = "\(loadSource)"
        source = span
    }

    /// Closes the open source step's span with what it gave.
    mutating func endSource(result: String) {
        guard let source else { return }
        source.attributes["image_pipeline.result"] = result
        source.end()
        self.source = nil
    }

    /// Runs `body` inside a child span named `name`. The disk write runs after the fetch has finished (its image
    /// was delivered first), so its span may start after its parent's ended, as follow-up work does.
    func child<T>(_ name: String, _ body: () throws -> T) rethrows -> T {
        let span = tracer.startSpan(name, context: root.context, ofKind: .internal)
        defer { span.end() }
        return try body()
    }

    /// Ends the fetch's span: its outcome, and its error when it failed.
    mutating func finish(outcome: String, error: (any Error)?) {
        guard !isFinished else { return }
        isFinished = true
        endSource(result: "neverCompleted")
        root.attributes["image_pipeline.outcome"] = outcome
        if let error {
            root.recordError(error)
            root.setStatus(SpanStatus(code: .error))
        }
        root.end()
    }
}
