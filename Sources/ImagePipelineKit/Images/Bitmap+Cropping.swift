/// Cutting a rectangle out of a bitmap (a thumbnail's centre, a source crop).
extension Bitmap {
    /// The rectangle at `x`, `y` of `size`: a copy of its rows.
    /// - Throws: ``ImageCodecError/unsupported(_:)`` when the rectangle does not lie inside the bitmap,
    ///   ``ImageCodecError/limitExceeded(_:)`` for an empty size.
    public func cropped(x: Int, y: Int, size: PixelSize) throws -> Bitmap {
        guard x >= 0, y >= 0, x + size.width <= width, y + size.height <= height else {
            throw ImageCodecError.unsupported("a \(size.width)x\(size.height) crop at \(x),\(y) of a \(width)x\(height) bitmap")
        }
        return try withUnsafeBytes { source in
            try Bitmap(width: size.width, height: size.height) { pixels, stride in
                for row in 0..<size.height {
                    let from = source.baseAddress! + (y + row) * bytesPerRow + x * Bitmap.bytesPerPixel
                    (pixels + row * stride).copyMemory(from: from, byteCount: size.width * Bitmap.bytesPerPixel)
                }
            }
        }
    }
}
