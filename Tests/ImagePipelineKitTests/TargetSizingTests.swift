import Testing
@testable import ImagePipelineKit

@Suite("Target sizing: TIP's scaled sizes per content mode, and the rendered-cache match")
struct TargetSizingTests {
    private func scaled(_ w: Int, _ h: Int, to tw: Int, _ th: Int, _ mode: ContentMode) -> PixelSize {
        TargetSizing(dimensions: PixelSize(width: tw, height: th), contentMode: mode)
            .scaledSize(of: PixelSize(width: w, height: h))
    }

    @Test("Scenario 56: scaling math matches TIP's table, upscaling included")
    func scenario56() {
        #expect(scaled(1000, 500, to: 100, 100, .fit) == PixelSize(width: 100, height: 50))
        #expect(scaled(1000, 500, to: 100, 100, .fill) == PixelSize(width: 200, height: 100))
        #expect(scaled(1000, 500, to: 100, 100, .stretch) == PixelSize(width: 100, height: 100))
        #expect(scaled(135, 153, to: 480, 546, .fit) == PixelSize(width: 480, height: 544))
        #expect(scaled(135, 153, to: 480, 546, .fill) == PixelSize(width: 482, height: 546))
        #expect(scaled(800, 777, to: 954, 954, .fit) == PixelSize(width: 954, height: 927))
        #expect(scaled(800, 777, to: 954, 954, .fill) == PixelSize(width: 982, height: 954))
        #expect(scaled(800, 800, to: 954, 954, .fill) == PixelSize(width: 954, height: 954))
        #expect(scaled(1880, 1253, to: 3760, 2506, .stretch) == PixelSize(width: 3760, height: 2506))
    }

    @Test("Scenario 57: 1880x1253 matches (1880, 2506) for fit only")
    func scenario57() {
        let image = PixelSize(width: 1880, height: 1253)
        let target = PixelSize(width: 1880, height: 2506)
        #expect(TargetSizing(dimensions: target, contentMode: .fit).isSatisfied(by: image))
        #expect(!TargetSizing(dimensions: target, contentMode: .fill).isSatisfied(by: image))
        #expect(!TargetSizing(dimensions: target, contentMode: .stretch).isSatisfied(by: image))
        #expect(!TargetSizing(dimensions: target, contentMode: .center).isSatisfied(by: image))
    }

    @Test("No target, a non-positive target or center mode keep the source size")
    func noScaling() {
        let source = PixelSize(width: 640, height: 480)
        #expect(TargetSizing.original.scaledSize(of: source) == source)
        #expect(scaled(640, 480, to: 0, 100, .fill) == source)
        #expect(scaled(640, 480, to: 100, 100, .center) == source)
    }
}
