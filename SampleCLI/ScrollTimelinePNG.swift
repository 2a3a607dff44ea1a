import Foundation
import ImagePipelineKit

extension ScrollPictures {
    /// The timeline as a PNG, the same plot as ``timeline(busyMs:budgetMs:imagesCompleted:)``: frame latency,
    /// vsync to frame done (grey bars, red over the budget), the budget (dashed red line) and images completed so far
    /// (blue line, right axis). Drawn into a bitmap and encoded by our PNG encoder; labels use a small pixel
    /// font of digits and a few letters, so no font library is needed.
    static func timelinePNG(busyMs: [Double], budgetMs: Double, imagesCompleted: [Int]) throws -> Data {
        var canvas = PixelCanvas(width: 900, height: 300, background: .white)
        let left = 60, right = 840, top = 30, bottom = 260
        let frames = max(busyMs.count, 1)
        let maxMs = max(budgetMs * 1.5, busyMs.max() ?? 0)
        let maxImages = max(imagesCompleted.max() ?? 0, 1)
        func x(_ frame: Int) -> Int { left + frame * (right - left) / frames }
        func yMs(_ ms: Double) -> Int { bottom - Int((ms / maxMs * Double(bottom - top)).rounded()) }
        func yImages(_ count: Int) -> Int { bottom - count * (bottom - top) / maxImages }

        for (frame, ms) in busyMs.enumerated() {
            let barTop = yMs(ms)
            guard barTop < bottom else { continue }
            canvas.fill(x: x(frame), y: barTop, width: max(x(frame + 1) - x(frame), 1), height: bottom - barTop,
                        ms > budgetMs ? .red : .grey)
        }
        let budgetY = yMs(budgetMs)
        for dashStart in stride(from: left, to: right, by: 8) {
            canvas.fill(x: dashStart, y: budgetY, width: min(5, right - dashStart), height: 1, .red)
        }
        var previous: (Int, Int)?
        for (frame, count) in imagesCompleted.enumerated() {
            let point = (x(frame), yImages(count))
            if let previous { canvas.line(from: previous, to: point, .blue) }
            previous = point
        }
        // Axes and labels: ms on the left, images on the right, frames along the bottom.
        canvas.fill(x: left, y: top, width: 1, height: bottom - top + 1, .black)
        canvas.fill(x: left, y: bottom, width: right - left + 1, height: 1, .black)
        canvas.fill(x: right, y: top, width: 1, height: bottom - top + 1, .blue)
        canvas.text(String(format: "%.1f MS", maxMs), x: 4, y: top, .black)
        canvas.text(String(format: "%.2f MS", budgetMs), x: 4, y: budgetY - 3, .red)
        canvas.text("0", x: left - 8, y: bottom - 3, .black)
        canvas.text("\(maxImages)", x: right + 6, y: top, .blue)
        canvas.text("IMAGES", x: right + 6, y: top + 12, .blue)
        canvas.text("0", x: left, y: bottom + 8, .black)
        canvas.text("FRAME \(frames)", x: right - 70, y: bottom + 8, .black)
        return try CodecCatalogue.shared.encode(ImageContainer(bitmap: try canvas.bitmap()), as: .png)
    }
}

/// A small RGBA drawing surface for the timeline: rectangles, lines and a pixel font.
private struct PixelCanvas {
    struct Colour {
        var r: UInt8, g: UInt8, b: UInt8
        static let white = Colour(r: 255, g: 255, b: 255)
        static let black = Colour(r: 30, g: 30, b: 30)
        static let grey = Colour(r: 150, g: 150, b: 150)
        static let red = Colour(r: 210, g: 50, b: 50)
        static let blue = Colour(r: 50, g: 100, b: 200)
    }

    let width: Int
    let height: Int
    private var pixels: [UInt8]

    init(width: Int, height: Int, background: Colour) {
        self.width = width
        self.height = height
        pixels = [UInt8](repeating: 255, count: width * height * 4)
        fill(x: 0, y: 0, width: width, height: height, background)
    }

    /// Fills a rectangle, clipped to the canvas.
    mutating func fill(x: Int, y: Int, width w: Int, height h: Int, _ colour: Colour) {
        let rows = max(y, 0)..<max(min(y + h, height), max(y, 0))
        let columns = max(x, 0)..<max(min(x + w, width), max(x, 0))
        for row in rows {
            for column in columns {
                let offset = (row * width + column) * 4
                pixels[offset] = colour.r
                pixels[offset + 1] = colour.g
                pixels[offset + 2] = colour.b
                pixels[offset + 3] = 255
            }
        }
    }

    /// A two-pixel-wide line (Bresenham), clipped to the canvas.
    mutating func line(from start: (Int, Int), to end: (Int, Int), _ colour: Colour) {
        var (x, y) = start
        let dx = abs(end.0 - x), dy = -abs(end.1 - y)
        let sx = x < end.0 ? 1 : -1, sy = y < end.1 ? 1 : -1
        var error = dx + dy
        while true {
            fill(x: x, y: y, width: 2, height: 2, colour)
            if x == end.0 && y == end.1 { break }
            let doubled = 2 * error
            if doubled >= dy { error += dy; x += sx }
            if doubled <= dx { error += dx; y += sy }
        }
    }

    /// `text` in a 3x5 pixel font drawn at twice its size; characters without a glyph are left blank.
    mutating func text(_ text: String, x: Int, y: Int, _ colour: Colour) {
        for (index, character) in text.uppercased().enumerated() {
            guard let rows = Self.glyphs[character] else { continue }
            for (row, bits) in rows.enumerated() {
                for column in 0..<3 where bits & (0b100 >> column) != 0 {
                    fill(x: x + index * 8 + column * 2, y: y + row * 2, width: 2, height: 2, colour)
                }
            }
        }
    }

    func bitmap() throws -> Bitmap {
        try Bitmap(width: width, height: height) { destination, stride in
            pixels.withUnsafeBytes { source in
                for row in 0..<height {
                    destination.advanced(by: row * stride)
                        .copyMemory(from: source.baseAddress!.advanced(by: row * width * 4), byteCount: width * 4)
                }
            }
        }
    }

    /// Rows of three bits, top to bottom.
    private static let glyphs: [Character: [UInt8]] = [
        "0": [0b111, 0b101, 0b101, 0b101, 0b111], "1": [0b010, 0b110, 0b010, 0b010, 0b111],
        "2": [0b111, 0b001, 0b111, 0b100, 0b111], "3": [0b111, 0b001, 0b111, 0b001, 0b111],
        "4": [0b101, 0b101, 0b111, 0b001, 0b001], "5": [0b111, 0b100, 0b111, 0b001, 0b111],
        "6": [0b111, 0b100, 0b111, 0b101, 0b111], "7": [0b111, 0b001, 0b010, 0b010, 0b010],
        "8": [0b111, 0b101, 0b111, 0b101, 0b111], "9": [0b111, 0b101, 0b111, 0b001, 0b111],
        ".": [0b000, 0b000, 0b000, 0b000, 0b010],
        "A": [0b010, 0b101, 0b111, 0b101, 0b101], "E": [0b111, 0b100, 0b110, 0b100, 0b111],
        "F": [0b111, 0b100, 0b110, 0b100, 0b100], "G": [0b111, 0b100, 0b101, 0b101, 0b111],
        "I": [0b111, 0b010, 0b010, 0b010, 0b111], "M": [0b101, 0b111, 0b111, 0b101, 0b101],
        "R": [0b110, 0b101, 0b110, 0b101, 0b101], "S": [0b111, 0b100, 0b111, 0b001, 0b111],
    ]
}
