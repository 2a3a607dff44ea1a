extension Bitmap {
    /// The upright version of a bitmap stored with `orientation` (EXIF rotation and mirroring applied).
    ///
    /// Returns `self` for ``ImageOrientation/up``; otherwise one pass over the pixels into a new bitmap.
    public func applying(_ orientation: ImageOrientation) throws -> Bitmap {
        if orientation == .up { return self }
        let out = orientation.displayedSize(ofStored: size)
        let srcW = width, srcH = height
        return try withUnsafeBytes { src in
            let source = src.baseAddress!
            let srcStride = bytesPerRow
            return try Bitmap(width: out.width, height: out.height) { dst, dstStride in
                for dy in 0..<out.height {
                    let row = (dst + dy * dstStride).assumingMemoryBound(to: UInt32.self)
                    for dx in 0..<out.width {
                        // Where output pixel (dx, dy) comes from in the stored image.
                        let (sx, sy): (Int, Int)
                        switch orientation {
                        case .up: (sx, sy) = (dx, dy)
                        case .upMirrored: (sx, sy) = (srcW - 1 - dx, dy)
                        case .down: (sx, sy) = (srcW - 1 - dx, srcH - 1 - dy)
                        case .downMirrored: (sx, sy) = (dx, srcH - 1 - dy)
                        case .leftMirrored: (sx, sy) = (dy, dx)
                        case .right: (sx, sy) = (dy, srcH - 1 - dx)
                        case .rightMirrored: (sx, sy) = (srcW - 1 - dy, srcH - 1 - dx)
                        case .left: (sx, sy) = (srcW - 1 - dy, dx)
                        }
                        row[dx] = source.load(fromByteOffset: sy * srcStride + sx * 4, as: UInt32.self)
                    }
                }
            }
        }
    }
}
