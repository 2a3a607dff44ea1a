import CImageCodecs
import Testing
@testable import ImagePipelineKit

/// Makes a bitmap whose pixel (x, y) is `color(x, y)` (already premultiplied).
func makeBitmap(width: Int, height: Int, _ color: (Int, Int) -> RGBA) throws -> Bitmap {
    try Bitmap(width: width, height: height) { pixels, bytesPerRow in
        for y in 0..<height {
            let row = (pixels + y * bytesPerRow).assumingMemoryBound(to: UInt8.self)
            for x in 0..<width {
                let c = color(x, y)
                row[x * 4] = c.r; row[x * 4 + 1] = c.g; row[x * 4 + 2] = c.b; row[x * 4 + 3] = c.a
            }
        }
    }
}

private func grayStatistics(_ bitmap: Bitmap) -> (mean: Double, maxDeviation: Double) {
    var values: [Double] = []
    for y in 0..<bitmap.height { for x in 0..<bitmap.width { values.append(Double(bitmap.pixel(x: x, y: y).r)) } }
    let mean = values.reduce(0, +) / Double(values.count)
    return (mean, values.map { abs($0 - mean) }.max()!)
}

@Suite("Scaler")
struct ScalerTests {
    @Test("An 8x downscale of a one-pixel checkerboard is flat grey, not aliased stripes")
    func noAliasingOnCheckerboard() throws {
        let board = try makeBitmap(width: 1024, height: 768) { x, y in
            (x + y) % 2 == 0 ? RGBA(r: 255, g: 255, b: 255, a: 255) : RGBA(r: 0, g: 0, b: 0, a: 255)
        }
        let small = try board.scaled(to: PixelSize(width: 128, height: 96))
        #expect(small.size == PixelSize(width: 128, height: 96))
        let stats = grayStatistics(small)
        #expect(abs(stats.mean - 127.5) < 2)
        #expect(stats.maxDeviation <= 2)   // nearest-neighbour would give 0/255 everywhere
    }

    @Test("Stripes whose period does not divide the factor stay close to their mean at 1/8")
    func noAliasingOnOddPeriod() throws {
        // Period 3: one white column in three. Point sampling every 8th column shows a beat pattern.
        let stripes = try makeBitmap(width: 1200, height: 64) { x, _ in
            x % 3 == 0 ? RGBA(r: 255, g: 255, b: 255, a: 255) : RGBA(r: 0, g: 0, b: 0, a: 255)
        }
        let small = try stripes.scaled(to: PixelSize(width: 150, height: 8))
        let stats = grayStatistics(small)
        #expect(abs(stats.mean - 85) < 3)
        // Point sampling swings ±170 here; a cubic filter alone leaves about ±26; the box reduction first, under 16.
        #expect(stats.maxDeviation < 16)
    }

    @Test("The resampler's SIMD rows give the same bytes as its one-tap-at-a-time rows, shrinking and enlarging")
    func simdRowsMatchScalarRows() {
        expectSameBytes(seed: 0x9E37_79B9_7F4A_7C15, sizes: { round, next in
            let source = PixelSize(width: 1 + next(200), height: 1 + next(120))
            let target = round % 2 == 0
                ? PixelSize(width: 1 + next(source.width), height: 1 + next(source.height))
                : PixelSize(width: 1 + next(400), height: 1 + next(240))
            return (source, target)
        }, simd: { ipk_resample_rgba_premultiplied($0, $1, $2, $3, $4, $5, $6, $7, nil) },
           scalar: ipk_resample_rgba_premultiplied_scalar)
    }

    @Test("The enlarger's SIMD rows give the same bytes as its one-pixel-at-a-time rows")
    func enlargementSIMDRowsMatchScalarRows() {
        expectSameBytes(seed: 0xD1B5_4A32_D192_ED03, sizes: { _, next in
            let source = PixelSize(width: 1 + next(60), height: 1 + next(60))
            return (source, PixelSize(width: source.width + next(200), height: source.height + next(200)))
        }, simd: ipk_upscale_bilinear_rgba, scalar: ipk_upscale_bilinear_rgba_scalar)
    }

    /// A C scaler's call: source, width, height, stride; destination, width, height, stride.
    typealias ScalerCall = (UnsafePointer<UInt8>?, Int32, Int32, Int, UnsafeMutablePointer<UInt8>?, Int32, Int32, Int) -> Int32

    /// Runs both paths of a C scaler on 400 sources of random bytes (colour above alpha too, so that the clamps
    /// are compared), at sizes `sizes` draws, and expects the same status and the same bytes.
    private func expectSameBytes(seed: UInt64, sizes: (Int, (Int) -> Int) -> (source: PixelSize, target: PixelSize),
                                 simd: ScalerCall, scalar: ScalerCall) {
        var state = seed
        func next(_ bound: Int) -> Int {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return Int(state % UInt64(bound))
        }
        for round in 0..<400 {
            let (source, target) = sizes(round, next)
            let stride = source.width * 4 + 4 * next(3)
            let pixels = (0..<stride * source.height).map { _ in UInt8(truncatingIfNeeded: next(256)) }
            var fast = [UInt8](repeating: 0, count: target.width * target.height * 4)
            var plain = fast
            let fastStatus = simd(pixels, Int32(source.width), Int32(source.height), stride,
                                  &fast, Int32(target.width), Int32(target.height), target.width * 4)
            let plainStatus = scalar(pixels, Int32(source.width), Int32(source.height), stride,
                                     &plain, Int32(target.width), Int32(target.height), target.width * 4)
            #expect(fastStatus == 0 && plainStatus == 0)
            let differing = zip(fast, plain).filter { $0 != $1 }.count
            #expect(differing == 0, "\(source.width)x\(source.height) to \(target.width)x\(target.height): \(differing) bytes differ")
        }
    }

    @Test("Upscaling and non-uniform stretch produce exactly the requested size")
    func exactSizes() throws {
        let image = try makeBitmap(width: 40, height: 30) { x, y in RGBA(r: UInt8(x * 6), g: UInt8(y * 8), b: 0, a: 255) }
        #expect(try image.scaled(to: PixelSize(width: 97, height: 31)).size == PixelSize(width: 97, height: 31))
        #expect(try image.scaled(to: PixelSize(width: 3, height: 200)).size == PixelSize(width: 3, height: 200))
        #expect(try image.scaled(to: image.size) === image)
    }

    @Test("An enlargement is bilinear with centred pixels and clamped edges: within 1 of the exact value everywhere")
    func bilinearEnlargement() throws {
        let source = try makeBitmap(width: 7, height: 5) { x, y in
            RGBA(r: UInt8(x * 37), g: UInt8(y * 61), b: UInt8((x * y * 29) % 256), a: 255)
        }
        for size in [PixelSize(width: 7, height: 11), PixelSize(width: 50, height: 5), PixelSize(width: 61, height: 43)] {
            let large = try source.scaled(to: size)
            #expect(large.size == size)
            /// The exact bilinear value of `channel` at a destination pixel, in floating point.
            func exact(_ x: Int, _ y: Int, _ channel: (RGBA) -> UInt8) -> Double {
                func position(_ d: Int, _ sourceCount: Int, _ count: Int) -> (Int, Int, Double) {
                    let s = max(0, (Double(d) + 0.5) * Double(sourceCount) / Double(count) - 0.5)
                    let i = min(Int(s), sourceCount - 1)
                    return (i, min(i + 1, sourceCount - 1), s - Double(i))
                }
                let (x0, x1, fx) = position(x, source.width, size.width)
                let (y0, y1, fy) = position(y, source.height, size.height)
                func at(_ x: Int, _ y: Int) -> Double { Double(channel(source.pixel(x: x, y: y))) }
                let top = at(x0, y0) * (1 - fx) + at(x1, y0) * fx
                let bottom = at(x0, y1) * (1 - fx) + at(x1, y1) * fx
                return top * (1 - fy) + bottom * fy
            }
            var worst = 0.0
            for y in 0..<size.height {
                for x in 0..<size.width {
                    let p = large.pixel(x: x, y: y)
                    worst = max(worst, abs(Double(p.r) - exact(x, y, \.r)), abs(Double(p.g) - exact(x, y, \.g)),
                                abs(Double(p.b) - exact(x, y, \.b)))
                    #expect(p.a == 255)
                }
            }
            #expect(worst <= 1.0, "size \(size): off by \(worst)")
        }
        // Corners keep the source's corner pixels exactly (clamped edges, no darkening from outside the image).
        let large = try source.scaled(to: PixelSize(width: 70, height: 50))
        #expect(large.pixel(x: 0, y: 0) == source.pixel(x: 0, y: 0))
        #expect(large.pixel(x: 69, y: 49) == source.pixel(x: 6, y: 4))
    }

    @Test("Premultiplied transparency does not bleed colour: a red/transparent edge stays red")
    func premultipliedEdges() throws {
        let image = try makeBitmap(width: 64, height: 64) { x, _ in
            x < 32 ? RGBA(r: 255, g: 0, b: 0, a: 255) : RGBA(r: 0, g: 0, b: 0, a: 0)
        }
        let small = try image.scaled(to: PixelSize(width: 8, height: 8))
        for y in 0..<8 {
            for x in 0..<8 {
                let p = small.pixel(x: x, y: y)
                #expect(p.g == 0 && p.b == 0)
                #expect(p.r <= p.a)   // premultiplied invariant
            }
        }
        #expect(small.pixel(x: 0, y: 0) == RGBA(r: 255, g: 0, b: 0, a: 255))
        #expect(small.pixel(x: 7, y: 0).a == 0)
    }

    @Test("Box reduction averages whole blocks and keeps the remainder")
    func boxReduction() throws {
        let image = try makeBitmap(width: 5, height: 3) { x, _ in RGBA(r: UInt8(x * 10), g: 0, b: 0, a: 255) }
        let reduced = try image.boxReduced(by: 2)
        #expect(reduced.size == PixelSize(width: 3, height: 2))
        #expect(reduced.pixel(x: 0, y: 0).r == 5)
        #expect(reduced.pixel(x: 2, y: 1).r == 40)
    }
}

@Suite("Orientation")
struct OrientationTests {
    /// Where the stored top-left and top-right pixels end up, as (x, y) in the upright image (EXIF 2.3, tag 0x0112).
    private static let expected: [ImageOrientation: (topLeft: (Int, Int), topRight: (Int, Int))] = [
        .up: ((0, 0), (2, 0)), .upMirrored: ((2, 0), (0, 0)), .down: ((2, 1), (0, 1)),
        .downMirrored: ((0, 1), (2, 1)), .leftMirrored: ((0, 0), (0, 2)), .right: ((1, 0), (1, 2)),
        .rightMirrored: ((1, 2), (1, 0)), .left: ((0, 2), (0, 0)),
    ]

    @Test("Each EXIF orientation moves the stored corners where the EXIF specification says", arguments: ImageOrientation.allCases)
    func corners(orientation: ImageOrientation) throws {
        // Stored 3x2: top-left red, top-right green, everything else black.
        let stored = try makeBitmap(width: 3, height: 2) { x, y in
            if (x, y) == (0, 0) { return RGBA(r: 255, g: 0, b: 0, a: 255) }
            if (x, y) == (2, 0) { return RGBA(r: 0, g: 255, b: 0, a: 255) }
            return RGBA(r: 0, g: 0, b: 0, a: 255)
        }
        let upright = try stored.applying(orientation)
        #expect(upright.size == orientation.displayedSize(ofStored: stored.size))
        let (topLeft, topRight) = Self.expected[orientation]!
        #expect(upright.pixel(x: topLeft.0, y: topLeft.1) == RGBA(r: 255, g: 0, b: 0, a: 255))
        #expect(upright.pixel(x: topRight.0, y: topRight.1) == RGBA(r: 0, g: 255, b: 0, a: 255))
    }

    @Test("Out-of-range EXIF values count as upright")
    func invalidValues() {
        #expect(ImageOrientation(exifValue: 0) == .up)
        #expect(ImageOrientation(exifValue: 9) == .up)
    }
}
