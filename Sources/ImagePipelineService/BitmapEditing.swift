import ImagePipelineKit

/// The pixel edits a thumbnail needs after scaling and cutting (``Bitmap/cropped(x:y:size:)``): flips, a padded
/// canvas and a flat background.
/// Each makes a new bitmap (bitmaps are immutable) and copies rows, never pixels one by one where a row will do.
extension Bitmap {
    /// Mirrored left to right and/or top to bottom.
    func flipped(horizontally: Bool, vertically: Bool) throws -> Bitmap {
        guard horizontally || vertically else { return self }
        return try withUnsafeBytes { source in
            try Bitmap(width: width, height: height) { pixels, stride in
                for row in 0..<height {
                    let from = (source.baseAddress! + (vertically ? height - 1 - row : row) * bytesPerRow)
                        .assumingMemoryBound(to: UInt32.self)
                    let to = (pixels + row * stride).assumingMemoryBound(to: UInt32.self)
                    if horizontally {
                        for column in 0..<width { to[column] = from[width - 1 - column] }
                    } else {
                        to.update(from: from, count: width)
                    }
                }
            }
        }
    }

    /// Centred on a canvas of `box`, the rest painted `color`.
    func padded(to box: PixelSize, color: RGBA) throws -> Bitmap {
        let left = (box.width - width) / 2, top = (box.height - height) / 2
        let fill = color.premultipliedWord
        return try withUnsafeBytes { source in
            try Bitmap(width: box.width, height: box.height) { pixels, stride in
                for row in 0..<box.height {
                    let to = (pixels + row * stride).assumingMemoryBound(to: UInt32.self)
                    to.initialize(repeating: fill, count: box.width)
                    let sourceRow = row - top
                    guard sourceRow >= 0 && sourceRow < height else { continue }
                    (pixels + row * stride + left * Bitmap.bytesPerPixel)
                        .copyMemory(from: source.baseAddress! + sourceRow * bytesPerRow, byteCount: width * Bitmap.bytesPerPixel)
                }
            }
        }
    }

    /// Composited over an opaque `background`: what a JPEG, which has no alpha, should show.
    func flattened(over background: RGBA) throws -> Bitmap {
        guard hasTransparency else { return self }
        let backgroundChannels = [background.r, background.g, background.b].map(UInt32.init)
        return try withUnsafeBytes { source in
            try Bitmap(width: width, height: height) { pixels, stride in
                for row in 0..<height {
                    let from = (source.baseAddress! + row * bytesPerRow).assumingMemoryBound(to: UInt8.self)
                    let to = (pixels + row * stride).assumingMemoryBound(to: UInt8.self)
                    for column in 0..<width {
                        let offset = column * 4
                        let transparency = 255 - UInt32(from[offset + 3])
                        // Premultiplied: the result is colour + background × (1 − alpha).
                        for channel in 0..<3 {
                            let value = UInt32(from[offset + channel]) + (backgroundChannels[channel] * transparency + 127) / 255
                            to[offset + channel] = UInt8(min(255, value))
                        }
                        to[offset + 3] = 255
                    }
                }
            }
        }
    }
}

extension RGBA {
    /// The colour as one premultiplied RGBA pixel in memory order.
    var premultipliedWord: UInt32 {
        let alpha = UInt32(a)
        let red = (UInt32(r) * alpha + 127) / 255, green = (UInt32(g) * alpha + 127) / 255, blue = (UInt32(b) * alpha + 127) / 255
        return UInt32(littleEndian: red | green << 8 | blue << 16 | alpha << 24)
    }
}
