/// Draws GIF frames onto the logical screen the way browsers do (disposal, transparency, clipping).
///
/// The screen is a ``PixelCanvas`` of RGBA words with transparent pixels 0,0,0,0 — premultiplied and straight
/// alike, since GIF alpha is all or nothing. Finished frames leave as copies (``snapshot()``); the last one
/// takes the canvas itself (``freeze()``), so a still GIF is never copied. A class so the canvas has one
/// owner and is never copied on write. Not thread-safe: owned by one decoding session.
final class GIFCompositor {
    /// How a frame's area is treated before the next frame is drawn (GIF89a disposal method).
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

        /// The part of the frame on a `width × height` screen, or nil when it is wholly outside.
        func visibleRect(onScreen width: Int, _ height: Int) -> (x: Range<Int>, y: Range<Int>)? {
            let x0 = max(0, left), x1 = min(width, left + self.width)
            let y0 = max(0, top), y1 = min(height, top + self.height)
            return x0 < x1 && y0 < y1 ? (x0..<x1, y0..<y1) : nil
        }
    }

    let width: Int
    let height: Int
    private let canvas: PixelCanvas
    /// The screen under the last frame's rectangle, kept when that frame's disposal restores it.
    private var savedArea: [UInt32]?
    private var lastFrame: Frame?

    init(width: Int, height: Int) throws {
        self.width = width
        self.height = height
        canvas = try PixelCanvas(width: width, height: height)
        canvas.clear()
    }

    private func row(_ y: Int) -> UnsafeMutablePointer<UInt32> {
        (canvas.pointer + y * canvas.bytesPerRow).assumingMemoryBound(to: UInt32.self)
    }

    /// Applies the previous frame's disposal; call before drawing the next frame.
    func beginFrame(_ frame: Frame) {
        if let last = lastFrame, let rect = last.visibleRect(onScreen: width, height) {
            switch last.disposal {
            case .background:
                // Browsers clear to transparent rather than to the background colour.
                for y in rect.y { (row(y) + rect.x.lowerBound).update(repeating: 0, count: rect.x.count) }
            case .previous:
                if let saved = savedArea {
                    for (i, y) in rect.y.enumerated() {
                        saved.withUnsafeBufferPointer { (row(y) + rect.x.lowerBound).update(from: $0.baseAddress! + i * rect.x.count, count: rect.x.count) }
                    }
                }
            case .unspecified, .none:
                break
            }
        }
        savedArea = nil
        if frame.disposal == .previous, let rect = frame.visibleRect(onScreen: width, height) {
            var saved: [UInt32] = []
            saved.reserveCapacity(rect.x.count * rect.y.count)
            for y in rect.y { saved.append(contentsOf: UnsafeBufferPointer(start: row(y) + rect.x.lowerBound, count: rect.x.count)) }
            savedArea = saved
        }
        lastFrame = frame
    }

    /// Draws row `y` (0-based within the frame) of colour indices; parts outside the screen are clipped,
    /// transparent and out-of-palette indices leave the screen as it is.
    func draw(row y: Int, of frame: Frame, indices: UnsafeBufferPointer<UInt8>) {
        let screenY = frame.top + y
        guard screenY >= 0, screenY < height else { return }
        let firstX = max(0, -frame.left), lastX = min(frame.width, width - frame.left, indices.count)
        guard firstX < lastX else { return }
        let transparent = frame.transparentIndex ?? -1
        let destination = row(screenY) + frame.left
        frame.palette.withUnsafeBufferPointer { palette in
            let count = palette.count
            for x in firstX..<lastX {
                let index = Int(indices[x])
                if index == transparent || index >= count { continue }
                destination[x] = palette[index]
            }
        }
    }

    /// A copy of the screen as it is now.
    func snapshot() throws -> Bitmap { try canvas.snapshot(rows: height) }

    /// The screen itself, handed over without a copy; the compositor is finished afterwards.
    func freeze() -> Bitmap { canvas.freeze() }

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
