import Foundation
import ImagePipelineKit

/// The pictures `sample-cli scroll` can leave behind: the viewport at the end, and a timeline of the run.
enum ScrollPictures {
    /// One cell on screen at the end: where it sits and what it shows.
    struct PlacedImage {
        var x: Int
        var y: Int
        var image: ImageContainer?
    }

    /// The viewport (`width` × `height`) made from the decoded pixels the cells hold, each cell's image centred
    /// and cropped to its square, empty cells dark grey; encoded by our PNG encoder.
    static func snapshot(width: Int, height: Int, cellSize: Int, cells: [PlacedImage]) throws -> Data {
        // The pipeline never enlarges an animation: like a view, the snapshot scales such a frame up to cover
        // its cell as it draws it.
        let cover = TargetSizing(dimensions: PixelSize(width: cellSize, height: cellSize), contentMode: .fill)
        let shown: [Bitmap?] = try cells.map { cell in
            guard let bitmap = cell.image?.bitmap else { return nil }
            return cover.isSatisfied(by: bitmap.size) ? bitmap : try bitmap.scaled(for: cover)
        }
        let canvas = try Bitmap(width: width, height: height) { pixels, stride in
            // Opaque dark grey (premultiplied RGBA), then each cell's pixels over it.
            for row in 0..<height {
                let line = pixels.advanced(by: row * stride).assumingMemoryBound(to: UInt8.self)
                for x in 0..<width { line[x * 4] = 40; line[x * 4 + 1] = 40; line[x * 4 + 2] = 40; line[x * 4 + 3] = 255 }
            }
            for (cell, bitmap) in zip(cells, shown) {
                guard let bitmap else { continue }
                // Centre the image on the cell; copy the rows and columns that fall inside both.
                let left = cell.x + (cellSize - bitmap.width) / 2, top = cell.y + (cellSize - bitmap.height) / 2
                bitmap.withUnsafeBytes { source in
                    for sourceRow in 0..<bitmap.height {
                        let y = top + sourceRow
                        guard y >= max(0, cell.y), y < min(height, cell.y + cellSize) else { continue }
                        let firstX = max(left, cell.x, 0), lastX = min(left + bitmap.width, cell.x + cellSize, width)
                        guard firstX < lastX else { continue }
                        let from = source.baseAddress!.advanced(by: sourceRow * bitmap.bytesPerRow + (firstX - left) * 4)
                        let to = pixels.advanced(by: y * stride + firstX * 4)
                        to.copyMemory(from: from, byteCount: (lastX - firstX) * 4)
                    }
                }
            }
        }
        return try CodecCatalogue.shared.encode(ImageContainer(bitmap: canvas), as: .png)
    }

    /// An SVG of the run: frame latency, vsync to frame done (bars, with the frame budget as a line) and images
    /// completed so far (a line, right axis).
    static func timeline(busyMs: [Double], budgetMs: Double, imagesCompleted: [Int]) -> String {
        let width = 900.0, height = 300.0, margin = 40.0
        let frames = max(busyMs.count, 1)
        let maxMs = max(budgetMs * 1.5, busyMs.max() ?? 0)
        let maxImages = Double(max(imagesCompleted.max() ?? 0, 1))
        let xStep = (width - 2 * margin) / Double(frames)
        func x(_ frame: Int) -> Double { margin + Double(frame) * xStep }
        func yMs(_ ms: Double) -> Double { height - margin - ms / maxMs * (height - 2 * margin) }
        func yImages(_ count: Int) -> Double { height - margin - Double(count) / maxImages * (height - 2 * margin) }
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(margin)" y="16">frame latency, vsync to frame done (bars, ms; red: budget \(String(format: "%.2f", budgetMs)) ms) and images completed (blue line)</text>

            """
        for (frame, ms) in busyMs.enumerated() {
            let top = yMs(ms)
            let colour = ms > budgetMs ? "#d33" : "#999"
            svg += "<rect x=\"\(String(format: "%.2f", x(frame)))\" y=\"\(String(format: "%.2f", top))\" width=\"\(String(format: "%.2f", max(xStep, 0.5)))\" height=\"\(String(format: "%.2f", height - margin - top))\" fill=\"\(colour)\"/>\n"
        }
        svg += "<line x1=\"\(margin)\" x2=\"\(width - margin)\" y1=\"\(yMs(budgetMs))\" y2=\"\(yMs(budgetMs))\" stroke=\"red\" stroke-dasharray=\"4 3\"/>\n"
        let points = imagesCompleted.enumerated().map { String(format: "%.2f,%.2f", x($0.offset), yImages($0.element)) }
        svg += "<polyline fill=\"none\" stroke=\"#36c\" stroke-width=\"1.5\" points=\"\(points.joined(separator: " "))\"/>\n"
        svg += "<text x=\"\(margin)\" y=\"\(height - 10)\">0</text><text x=\"\(width - margin - 60)\" y=\"\(height - 10)\">frame \(frames)</text>\n"
        svg += "<text x=\"\(width - margin + 4)\" y=\"\(margin)\" fill=\"#36c\">\(Int(maxImages))</text>\n"
        svg += "<text x=\"4\" y=\"\(margin)\">\(String(format: "%.1f", maxMs)) ms</text>\n</svg>\n"
        return svg
    }
}
