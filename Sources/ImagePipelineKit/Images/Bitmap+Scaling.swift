import CImageCodecs

extension Bitmap {
    /// This bitmap resampled to exactly `size`; `self` when it already has that size.
    ///
    /// Downscales first shrink with an integer box filter to within 2x of `size` (cheap, and it is what keeps
    /// an 8x reduction free of aliasing), then one separable Catmull-Rom pass in fixed point finishes (as Pillow
    /// does; integer arithmetic makes it clearly cheaper than the float filters of stb_image_resize, which it
    /// replaced). JPEG decoders do the first step with DCT scaling instead. Enlargements on both axes are
    /// bilinear in fixed point, cheaper still: no sharper filter adds detail that is not there. Other
    /// stretches take the Catmull-Rom pass.
    public func scaled(to size: PixelSize) throws -> Bitmap {
        if size == self.size { return self }
        guard !size.isEmpty else { throw ImageCodecError.limitExceeded(.dimension(size)) }
        return try PipelineStage.scale.measuringWithinStage { try resampled(to: size) }
    }

    private func resampled(to size: PixelSize) throws -> Bitmap {
        if size.width >= width, size.height >= height { return try enlargedBilinearly(to: size) }
        // The largest integer factor that leaves at least 2x for the quality pass (never below the target).
        let factor = max(1, min(width / size.width, height / size.height) / 2)
        let source = factor >= 2 ? try boxReduced(by: factor) : self
        if source.size == size { return source }
        // The vertical pass's rows (a quarter of a megabyte for a photo's thumbnail) come from the pool: freshly
        // allocated, they were new pages to fault in at every call, since the allocator hands memory that size
        // back to the system when it is freed.
        let (rowBytes, overflow) = (source.width * Self.bytesPerPixel).multipliedReportingOverflow(by: size.height)
        guard !overflow else { throw ImageCodecError.limitExceeded(.pixels(size)) }
        let scratch = BitmapBufferPool.shared.take(byteCount: rowBytes)
        defer { BitmapBufferPool.shared.give(scratch) }
        return try source.withUnsafeBytes { src in
            try Bitmap(width: size.width, height: size.height) { dst, dstStride in
                let status = ipk_resample_rgba_premultiplied(
                    src.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(source.width),
                    Int32(source.height), source.bytesPerRow,
                    dst.assumingMemoryBound(to: UInt8.self), Int32(size.width), Int32(size.height), dstStride,
                    scratch.pointer.assumingMemoryBound(to: UInt8.self))
                if status != 0 { throw ImageCodecError.limitExceeded(.dimension(size)) }
            }
        }
    }

    private func enlargedBilinearly(to size: PixelSize) throws -> Bitmap {
        try withUnsafeBytes { src in
            try Bitmap(width: size.width, height: size.height) { dst, dstStride in
                let status = ipk_upscale_bilinear_rgba(
                    src.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(width), Int32(height), bytesPerRow,
                    dst.assumingMemoryBound(to: UInt8.self), Int32(size.width), Int32(size.height), dstStride)
                if status != 0 { throw ImageCodecError.limitExceeded(.dimension(size)) }
            }
        }
    }

    /// Averages `factor × factor` blocks: a cheap, alias-free reduction to `ceil(width / factor)` wide.
    func boxReduced(by factor: Int) throws -> Bitmap {
        let outW = (width + factor - 1) / factor, outH = (height + factor - 1) / factor
        return try withUnsafeBytes { src in
            try Bitmap(width: outW, height: outH) { dst, dstStride in
                ipk_box_reduce_rgba(
                    src.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(width), Int32(height),
                    bytesPerRow, dst.assumingMemoryBound(to: UInt8.self), dstStride, Int32(factor))
            }
        }
    }

    /// This bitmap at what `target` asks for, relative to its own size (the normal scale step after a decode).
    public func scaled(for target: TargetSizing) throws -> Bitmap {
        try scaled(to: target.scaledSize(of: size))
    }
}

extension Bitmap {
    /// The last step of every codec's render: stand the stored pixels upright, then scale them to what
    /// `target` asks of the full-size image.
    ///
    /// - Parameters:
    ///   - orientation: the stored pixels' EXIF orientation (``ImageOrientation/up`` when not applied).
    ///   - fullSize: the displayed dimensions of the whole image (``ImageProperties/dimensions``); the
    ///     bitmap may be smaller when the decoder reduced it (JPEG DCT scaling).
    ///   - target: the sizing asked for.
    ///   - isAnimationFrame: whether the bitmap is a frame of an animation, which is reduced to the target but
    ///     never enlarged (``TargetSizing/scaledSize(ofAnimation:)``).
    public func rendered(orientation: ImageOrientation, fullSize: PixelSize, target: TargetSizing,
                         isAnimationFrame: Bool = false) throws -> Bitmap {
        try applying(orientation).scaled(to: target.scaledSize(of: fullSize, isAnimated: isAnimationFrame))
    }
}
