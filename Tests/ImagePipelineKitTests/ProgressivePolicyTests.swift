import Testing
import ImagePipelineKit

/// TIP's built-in progressive policies, as pure functions of what has arrived.
@Suite("Progressive loading policies: TIP's built-ins and the JPEG default")
struct ProgressivePolicyTests {
    let size = PixelSize(width: 100, height: 100)

    func ask(_ policy: any ProgressiveLoadingPolicy, _ frame: ProgressiveFrameProgress, frames: Int, progress: Double,
             renders: Int) -> ProgressiveUpdateBehavior {
        policy.behavior(frameProgress: frame, frameCount: frames, progress: progress, type: .jpeg, dimensions: size,
                        renderCount: renders)
    }

    @Test("First and last frame: the first full scan (low quality allowed or a second scan), then only at the end")
    func firstAndLast() {
        let lowQuality = FirstAndLastFrameProgressivePolicy()
        #expect(ask(lowQuality, .fullFrame, frames: 1, progress: 0.1, renders: 0) == .updateWithFullFrameProgress)
        #expect(ask(lowQuality, .fullFrame, frames: 3, progress: 0.5, renders: 1) == .none)
        #expect(ask(lowQuality, .fullFrame, frames: 5, progress: 1, renders: 1) == .updateWithFullFrameProgress)
        #expect(ask(lowQuality, .partialFrame, frames: 1, progress: 0.5, renders: 0) == .none)
        let strict = FirstAndLastFrameProgressivePolicy(shouldRenderLowQualityFrame: false)
        #expect(ask(strict, .fullFrame, frames: 1, progress: 0.1, renders: 0) == .none)
        #expect(ask(strict, .fullFrame, frames: 2, progress: 0.2, renders: 0) == .updateWithFullFrameProgress)
    }

    @Test("Full frame: every scan after the first; the first only with low quality allowed or 20% in")
    func fullFrame() {
        let lowQuality = FullFrameProgressivePolicy()
        #expect(ask(lowQuality, .fullFrame, frames: 1, progress: 0.05, renders: 0) == .updateWithFullFrameProgress)
        #expect(ask(lowQuality, .fullFrame, frames: 4, progress: 0.6, renders: 3) == .updateWithFullFrameProgress)
        #expect(ask(lowQuality, .partialFrame, frames: 4, progress: 0.6, renders: 3) == .none)
        let strict = FullFrameProgressivePolicy(shouldRenderLowQualityFrame: false)
        #expect(ask(strict, .fullFrame, frames: 1, progress: 0.1, renders: 0) == .none)
        #expect(ask(strict, .fullFrame, frames: 1, progress: 0.2, renders: 0) == .updateWithFullFrameProgress)
    }

    @Test("Greedy renders any progress past its minimum; first and last opportunity once early, then at the end")
    func greedyAndOpportunity() {
        #expect(ask(GreedyProgressivePolicy(), .partialFrame, frames: 0, progress: 0.01, renders: 7) == .updateWithAnyProgress)
        #expect(ask(GreedyProgressivePolicy(minimumProgress: 0.5), .fullFrame, frames: 2, progress: 0.4, renders: 0) == .none)
        let opportunity = FirstAndLastOpportunityProgressivePolicy(minimumProgress: 0.1)
        #expect(ask(opportunity, .partialFrame, frames: 0, progress: 0.2, renders: 0) == .updateWithAnyProgress)
        #expect(ask(opportunity, .partialFrame, frames: 0, progress: 0.5, renders: 1) == .none)
        #expect(ask(opportunity, .fullFrame, frames: 9, progress: 1, renders: 1) == .updateWithFullFrameProgress)
        #expect(ask(DisabledProgressivePolicy(), .fullFrame, frames: 3, progress: 1, renders: 0) == .none)
    }

    @Test("The default policies cover JPEG with full frames")
    func defaults() {
        #expect(ProgressiveLoadingDefaults.policies[.jpeg] is FullFrameProgressivePolicy)
        #expect(ProgressiveLoadingDefaults.policies[.jxl] is FullFrameProgressivePolicy)
        #expect(ProgressiveLoadingDefaults.policies.count == 2)
    }
}
