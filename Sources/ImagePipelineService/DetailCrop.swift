import ImagePipelineKit

/// Where a `smart/` crop goes: the window with the most detail, measured as the sum of luma gradients.
///
/// thumbor finds faces and features with OpenCV; this service has no detector, so it keeps the busiest part of
/// the image, where the subject of a photo usually is (a sharp subject against a soft background). Each pixel's
/// detail is the absolute luma difference to its right and lower neighbours; the columns' and rows' sums give,
/// along the axis that has room, the window with the largest total. A window's score loses up to 10% the
/// farther it is from the centre, so a flat image, or several equal windows, crop at the centre, as a plain
/// crop would.
enum DetailCrop {
    /// The top-left corner of the `box` window of `bitmap` that keeps the most detail.
    static func origin(in bitmap: Bitmap, box: PixelSize) -> (x: Int, y: Int) {
        let freeX = bitmap.width - box.width, freeY = bitmap.height - box.height
        guard freeX > 0 || freeY > 0 else { return (0, 0) }
        var columns = [Double](repeating: 0, count: bitmap.width)
        var rows = [Double](repeating: 0, count: bitmap.height)
        bitmap.withUnsafeBytes { pixels in
            let base = pixels.baseAddress!.assumingMemoryBound(to: UInt8.self)
            func luma(_ x: Int, _ y: Int) -> Int {
                let pixel = base + y * bitmap.bytesPerRow + x * 4
                return (Int(pixel[0]) * 77 + Int(pixel[1]) * 150 + Int(pixel[2]) * 29) >> 8
            }
            for y in 0..<(bitmap.height - 1) {
                for x in 0..<(bitmap.width - 1) {
                    let here = luma(x, y)
                    let detail = Double(abs(here - luma(x + 1, y)) + abs(here - luma(x, y + 1)))
                    columns[x] += detail
                    rows[y] += detail
                }
            }
        }
        return (bestStart(columns, window: box.width), bestStart(rows, window: box.height))
    }

    /// The start of the `window`-long run of `sums` with the highest centre-weighted total.
    private static func bestStart(_ sums: [Double], window: Int) -> Int {
        let free = sums.count - window
        guard free > 0 else { return 0 }
        var total = sums[0..<window].reduce(0, +)
        var best = (start: 0, score: -Double.infinity, distance: Double.infinity)
        for start in 0...free {
            if start > 0 { total += sums[start + window - 1] - sums[start - 1] }
            let distance = abs(Double(start) - Double(free) / 2) / Double(free)
            let score = total * (1 - 0.2 * distance)
            let isTie = abs(score - best.score) <= 1e-9 * max(1, abs(score))
            if (score > best.score && !isTie) || (isTie && distance < best.distance) { best = (start, score, distance) }
        }
        return best.start
    }
}
