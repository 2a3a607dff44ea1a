import Foundation
import ImagePipelineKit
import InMemoryTracing
import Testing
import TestSupport
import Tracing

/// A finished span reduced to plain values: its name, its parent, its string attributes, whether it failed.
private struct SpanRecord: Sendable {
    var name: String
    var spanID: String
    var parentSpanID: String?
    var traceID: String
    var attributes: [String: String]
    var failed: Bool
    var errorCount: Int

    static func all(_ tracer: InMemoryTracer) -> [SpanRecord] {
        tracer.finishedSpans.map { span in
            var attributes: [String: String] = [:]
            span.attributes.forEach { key, value in
                if case .string(let text) = value { attributes[key] = text }
            }
            return SpanRecord(name: span.operationName, spanID: span.spanID, parentSpanID: span.parentSpanID,
                              traceID: span.traceID, attributes: attributes, failed: span.status?.code == .error,
                              errorCount: span.errors.count)
        }
    }
}

/// A fetch's spans, read back from swift-distributed-tracing's in-memory tracer.
@Suite("Fetch tracing")
struct FetchTracingTests {
    @Test("A cold fetch: a fetch span, a span per source step with its result, and decode and store children; a warm one stops at memory")
    func spans() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            let tracer = InMemoryTracer()
            h.configuration.tracer = tracer
            _ = await h.fetch(h.request("/a.jpg", identifier: "traced"))
            let cold = SpanRecord.all(tracer)
            tracer.clearFinishedSpans()
            h.pipeline.renderedCache.clearAll()
            _ = await h.fetch(h.request("/a.jpg", identifier: "traced"))
            try Self.check(cold: cold, warm: SpanRecord.all(tracer))
        }
    }

    private static func check(cold spans: [SpanRecord], warm: [SpanRecord]) throws {
        let root = try #require(spans.first { $0.name == "image-pipeline.fetch" })
        #expect(root.attributes["image_pipeline.identifier"] == "traced")
        #expect(root.attributes["image_pipeline.outcome"] == "success")
        let children = spans.filter { $0.parentSpanID == root.spanID }
        let sources = children.filter { $0.name == "image-pipeline.source" }
        #expect(sources.map { $0.attributes["image_pipeline.source"] ?? "" } == ["memory", "disk", "additional", "network"])
        #expect(sources.map { $0.attributes["image_pipeline.result"] ?? "" } == ["miss", "miss", "miss", "hitFinal"])
        let names = Set(children.map(\.name))
        #expect(names.isSuperset(of: ["image-pipeline.decode", "image-pipeline.memory-store", "image-pipeline.disk-write"]), "\(names)")
        #expect(spans.allSatisfy { $0.traceID == root.traceID })
        let warmSources = warm.filter { $0.name == "image-pipeline.source" }
        #expect(warmSources.map { $0.attributes["image_pipeline.source"] ?? "" } == ["memory"])
    }

    @Test("A failed fetch's span carries the error and an error status")
    func failure() async throws {
        try await FetchHarness.run(.httpClient) { (h: FetchHarness) async throws in
            let tracer = InMemoryTracer()
            h.configuration.tracer = tracer
            _ = await h.fetch(h.request("/missing.jpg", identifier: "missing"))
            let root = try #require(SpanRecord.all(tracer).first { $0.name == "image-pipeline.fetch" })
            #expect(root.failed && root.errorCount == 1)
            #expect(root.attributes["image_pipeline.outcome"] == "failure")
        }
    }
}
