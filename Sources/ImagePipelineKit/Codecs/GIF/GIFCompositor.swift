/// Draws GIF frames onto the logical screen the way browsers do (disposal, transparency, clipping).
///
/// The canvas is RGBA with transparent pixels 0,0,0,0 — premultiplied and straight alike, since GIF alpha
/// is all or nothing. Not thread-safe: owned by one decoding session.
struct GIFCompositor {
    /// How the previous frame's area is treated before the next frame is drawn (GIF89a disposal method).
    enum Disposal: Int {
        case unspecified = 0, none = 1, background = 2, previous = 3
    }

    /// One frame's placement and colours, as its records declare them.
    struct Frame {
        var left: Int
        var top: Int
        var width: Int
        var height: Int
        var palette: [UInt32]          // RGBA words, alpha 255
        var transparentIndex: Int?
        var disposal: Disposal
        var interlaced: Bool
    }

    let width: Int
    let height: Int
    private(set) var canvas: [UInt32]
    /// The canvas before the last frame was drawn, kept when that frame's disposal restores it.
    private var beforeLastFrame: [UInt32]?
    private var lastFrame: Frame?

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
        canvas = [UInt32](repeating: 0, count: width * height)
    }

    /// Applies the previous frame's disposal; call before drawing the next frame.
    mutating func beginFrame(_ frame: Frame) {
        if let last = lastFrame {
            switch last.disposal {
            case .background:
                // Browsers clear to transparent rather than to the background colour.
                clear(last)
            case .previous:
                if let saved = beforeLastFrame { canvas = saved }
            case .unspecified, .none:
                break
            }
        }
        beforeLastFrame = frame.disposal == .previous ? canvas : nil
        lastFrame = frame
    }

    /// Draws row `y` (0-based within the frame) of colour indices; parts outside the canvas are clipped,
    /// transparent and out-of-palette indices leave the canvas as it is.
    mutating func draw(row y: Int, of frame: Frame, indices: UnsafeBufferPointer<UInt8>) {
        let canvasY = frame.top + y
        guard canvasY >= 0, canvasY < height else { return }
        let firstX = max(0, -frame.left), lastX = min(frame.width, width - frame.left)
        guard firstX < lastX else { return }
        let palette = frame.palette
        let transparent = frame.transparentIndex ?? -1
        canvas.withUnsafeMutableBufferPointer { pixels in
            let rowStart = canvasY * width + frame.left
            for x in firstX..<lastX {
                let index = Int(indices[x])
                if index == transparent || index >= palette.count { continue }
                pixels[rowStart + x] = palette[index]
            }
        }
    }

    private mutating func clear(_ frame: Frame) {
        let top = max(0, frame.top), bottom = min(height, frame.top + frame.height)
        let left = max(0, frame.left), right = min(width, frame.left + frame.width)
        guard top < bottom, left < right else { return }
        for y in top..<bottom {
            for x in left..<right { canvas[y * width + x] = 0 }
        }
    }

    /// The rows of an interlaced frame in the order they arrive (GIF's four passes).
    static func interlacedRowOrder(height: Int) -> [Int] {
        var order: [Int] = []
        order.reserveCapacity(height)
        for (start, step) in [(0, 8), (4, 8), (2, 4), (1, 2)] {
            order.append(contentsOf: stride(from: start, to: height, by: step))
        }
        return order
    }
}
