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
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return Int(state % UInt64(bound))
        }
        for round in 0..<400 {
            let sourceWidth = 1 + next(200), sourceHeight = 1 + next(120)
            let width = round % 2 == 0 ? 1 + next(sourceWidth) : 1 + next(400)
            let height = round % 2 == 0 ? 1 + next(sourceHeight) : 1 + next(240)
            let stride = sourceWidth * 4 + 4 * next(3)
            // Raw random bytes: colour above alpha too, so that the clamps of both paths are compared.
            let source = (0..<stride * sourceHeight).map { _ in UInt8(truncatingIfNeeded: next(256)) }
            var simd = [UInt8](repeating: 0, count: width * height * 4)
            var scalar = simd
            let simdStatus = ipk_resample_rgba_premultiplied(source, Int32(sourceWidth), Int32(sourceHeight), stride,
                                                             &simd, Int32(width), Int32(height), width * 4, nil)
            let scalarStatus = ipk_resample_rgba_premultiplied_scalar(source, Int32(sourceWidth), Int32(sourceHeight), stride,
                                                                      &scalar, Int32(width), Int32(height), width * 4)
            #expect(simdStatus == 0 && scalarStatus == 0)
            let differing = zip(simd, scalar).filter { $0 != $1 }.count
            #expect(differing == 0, "\(sourceWidth)x\(sourceHeight) to \(width)x\(height): \(differing) bytes differ")
        }
    }

    @Test("The enlarger's SIMD rows give the same bytes as its one-pixel-at-a-time rows")
    func enlargementSIMDRowsMatchScalarRows() {
        var state: UInt64 = 0xD1B5_4A32_D192_ED03
        func next(_ bound: Int) -> Int {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return Int(state % UInt64(bound))
        }
        for _ in 0..<400 {
            let sourceWidth = 1 + next(60), sourceHeight = 1 + next(60)
            let width = sourceWidth + next(200), height = sourceHeight + next(200)
            let stride = sourceWidth * 4 + 4 * next(3)
            let source = (0..<stride * sourceHeight).map { _ in UInt8(truncatingIfNeeded: next(256)) }
            var simd = [UInt8](repeating: 0, count: width * height * 4)
            var scalar = simd
            let simdStatus = ipk_upscale_bilinear_rgba(source, Int32(sourceWidth), Int32(sourceHeight), stride,
                                                       &simd, Int32(width), Int32(height), width * 4)
            let scalarStatus = ipk_upscale_bilinear_rgba_scalar(source, Int32(sourceWidth), Int32(sourceHeight), stride,
                                                                &scalar, Int32(width), Int32(height), width * 4)
            #expect(simdStatus == 0 && scalarStatus == 0)
            let differing = zip(simd, scalar).filter { $0 != $1 }.count
            #expect(differing == 0, "\(sourceWidth)x\(sourceHeight) to \(width)x\(height): \(differing) bytes differ")
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
