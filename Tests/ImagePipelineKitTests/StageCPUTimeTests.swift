import MetricsTestKit
import Foundation
import Testing
@testable import ImagePipelineKit

@Suite("Stage CPU times: a stage inside another counts for itself only")
struct StageCPUTimeTests {
    /// A 2048x2048 gradient: resampling it to a thumbnail takes milliseconds of CPU.
    private static func largeBitmap() throws -> Bitmap {
        try makeBitmap(width: 2048, height: 2048) { x, y in
            RGBA(r: UInt8(x & 0xFF), g: UInt8(y & 0xFF), b: UInt8((x ^ y) & 0xFF), a: 255)
        }
    }

    /// A configuration that records stage times into the returned metrics.
    private static func recordingConfiguration() -> (TestMetrics, GlobalConfiguration) {
        let metrics = TestMetrics()
        let configuration = GlobalConfiguration()
        configuration.metricsFactory = metrics
        configuration.recordsStageCPUTime = true
        return (metrics, configuration)
    }

    @Test("Scaling inside a measured decode is recorded as scale, and the decode's time leaves it out")
    func nestedStageLeavesTheEnclosingOne() throws {
        let (metrics, configuration) = Self.recordingConfiguration()
        let bitmap = try Self.largeBitmap()
        let scaled = try configuration.measuring(.decode) { try bitmap.scaled(to: PixelSize(width: 300, height: 300)) }
        #expect(scaled.size == PixelSize(width: 300, height: 300))

        let label = PipelineMetricLabels.stageCPUTime
        let decode = try metrics.expectTimer(label, [("stage", "decode")]).values
        let scale = try metrics.expectTimer(label, [("stage", "scale")]).values
        #expect(decode.count == 1 && scale.count == 1)
        // The decode stage did nothing but call the scaler: counted whole, it would exceed the scale stage.
        #expect(scale[0] > 0)
        #expect(decode[0] < scale[0] / 4, "decode \(decode[0]) ns, scale \(scale[0]) ns")
    }

    @Test("Decodes at once: the wall time at each number of running decodes, from the first decode's start")
    func decodesAtOnceRecordsTheTimeAtEachNumber() throws {
        let (metrics, configuration) = Self.recordingConfiguration()
        // One decode for 20 ms, then a second beside it for 20 ms, then the first alone again.
        configuration.measuring(.decode) {
            Thread.sleep(forTimeInterval: 0.02)
            configuration.measuring(.decode) { Thread.sleep(forTimeInterval: 0.02) }
        }
        let label = PipelineMetricLabels.decodesAtOnceTime
        let one = try metrics.expectTimer(label, [("decodes", "1")]).values
        let two = try metrics.expectTimer(label, [("decodes", "2")]).values
        // Recorded at the second decode's start and at each end; nothing before the first decode started.
        #expect(one.count == 2 && two.count == 1)
        #expect(one.reduce(0, +) >= 20_000_000 && two[0] >= 20_000_000, "one \(one) ns, two \(two) ns")
        #expect(throws: (any Error).self) { try metrics.expectTimer(label, [("decodes", "0")]) }

        // Off, nothing more is counted or recorded.
        configuration.recordsStageCPUTime = false
        configuration.measuring(.decode) {}
        #expect(try metrics.expectTimer(label, [("decodes", "1")]).values.count == 2)
    }

    @Test("Scaling outside any measured stage records nothing")
    func scalingAloneRecordsNothing() throws {
        let (metrics, configuration) = Self.recordingConfiguration()
        // A configuration that records exists, but no stage of it is running on this thread.
        try withExtendedLifetime(configuration) { _ = try Self.largeBitmap().scaled(to: PixelSize(width: 300, height: 300)) }
        #expect(throws: (any Error).self) {
            try metrics.expectTimer(PipelineMetricLabels.stageCPUTime, [("stage", "scale")])
        }
    }

    @Test("Each stage's span is named image-pipeline. and the stage's name in lower case, words joined by hyphens")
    func spanNamesFollowTheStageNames() {
        for stage in PipelineStage.allCases {
            let words = stage.rawValue.reduce(into: "") { name, character in
                name += character.isUppercase ? "-" + character.lowercased() : String(character)
            }
            #expect(stage.spanName == "image-pipeline." + words)
        }
    }
}
