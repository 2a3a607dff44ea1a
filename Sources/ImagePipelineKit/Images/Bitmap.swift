import CImageCodecs

/// A decoded image: 8-bit RGBA, premultiplied alpha, rows aligned to 64 bytes, immutable.
///
/// A `Bitmap` is a class so a cache hit hands out a reference and never copies pixels. Its memory comes
/// from ``BitmapBufferPool/shared`` and goes back there when the last reference is released, or, for a hit in
/// an ``ImageTable``, is a view of the table's mapped file that the table leaves alone while the view lives. Pixels are
/// written once, inside the `initializer` closure of ``init(width:height:initializer:)``, and never again:
/// that is what makes sharing across threads safe.
public final class Bitmap: @unchecked Sendable {
    // @unchecked: `pixels` is written only inside init (before the object escapes) and read-only after.

    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// Bytes from one row to the next: `width × 4` rounded up to a multiple of 64.
    public let bytesPerRow: Int
    private let pixels: UnsafeMutableRawPointer
    /// The pool buffer behind `pixels`, given back when the bitmap goes; `nil` for a view of memory that
    /// something else owns (an ``ImageTable`` slot).
    private let pooledBuffer: BitmapBufferPool.Buffer?
    /// That other owner, kept alive as long as the view is.
    private let memoryOwner: AnyObject?

    /// Bytes per pixel (R, G, B, A).
    public static let bytesPerPixel = 4

    /// The row stride used for a bitmap `width` pixels wide.
    public static func alignedBytesPerRow(forWidth width: Int) -> Int {
        let alignment = BitmapBufferPool.alignment
        return (width * bytesPerPixel + alignment - 1) / alignment * alignment
    }

    /// Allocates a bitmap and lets `initializer` write every row.
    ///
    /// - Parameters:
    ///   - width: pixels per row.
    ///   - height: rows.
    ///   - initializer: receives the first byte and the row stride; it must write `height` rows of
    ///     `width` premultiplied RGBA pixels. Bytes past `width × 4` in a row are padding.
    /// - Throws: ``ImageCodecError/limitExceeded(_:)`` for empty or absurd sizes, and whatever
    ///   `initializer` throws (the buffer then goes straight back to the pool).
    public convenience init(
        width: Int, height: Int,
        initializer: (_ pixels: UnsafeMutableRawPointer, _ bytesPerRow: Int) throws -> Void
    ) throws {
        guard width > 0, height > 0, width <= 1 << 20, height <= 1 << 20 else {
            throw ImageCodecError.limitExceeded(.dimension(PixelSize(width: width, height: height)))
        }
        let bytesPerRow = Self.alignedBytesPerRow(forWidth: width)
        let (byteCount, overflow) = bytesPerRow.multipliedReportingOverflow(by: height)
        guard !overflow else {
            throw ImageCodecError.limitExceeded(.pixels(PixelSize(width: width, height: height)))
        }
        let buffer = BitmapBufferPool.shared.take(byteCount: byteCount)
        do {
            try initializer(buffer.pointer, bytesPerRow)
        } catch {
            BitmapBufferPool.shared.give(buffer)
            throw error
        }
        self.init(adopting: buffer, width: width, height: height, bytesPerRow: bytesPerRow)
    }

    /// Takes over a buffer a ``PixelCanvas`` finished writing: no copy. The caller gives up the buffer.
    init(adopting buffer: BitmapBufferPool.Buffer, width: Int, height: Int, bytesPerRow: Int) {
        self.width = width
        self.height = height
        self.bytesPerRow = bytesPerRow
        pixels = buffer.pointer
        pooledBuffer = buffer
        memoryOwner = nil
    }

    /// A view of pixels that `owner` keeps valid and unchanged for as long as it lives: no copy.
    init(viewing pixels: UnsafeMutableRawPointer, width: Int, height: Int, bytesPerRow: Int, owner: AnyObject) {
        self.width = width
        self.height = height
        self.bytesPerRow = bytesPerRow
        self.pixels = pixels
        pooledBuffer = nil
        memoryOwner = owner
    }

    deinit {
        if let pooledBuffer { BitmapBufferPool.shared.give(pooledBuffer) }
    }

    /// The bitmap's dimensions.
    public var size: PixelSize { PixelSize(width: width, height: height) }

    /// Bytes of pixel memory this bitmap accounts for (`bytesPerRow × height`), the cost caches charge.
    public var sizeInMemory: Int { bytesPerRow * height }

    /// Read access to the pixel memory, `bytesPerRow × height` bytes. Do not keep the pointer.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pixels, count: bytesPerRow * height))
    }

    /// The premultiplied RGBA value of one pixel, for tests and tools (slow: not for loops over images).
    public func pixel(x: Int, y: Int) -> RGBA {
        precondition(x >= 0 && x < width && y >= 0 && y < height, "pixel (\(x), \(y)) outside \(size)")
        let p = pixels.advanced(by: y * bytesPerRow + x * 4).assumingMemoryBound(to: UInt8.self)
        return RGBA(r: p[0], g: p[1], b: p[2], a: p[3])
    }

    /// One row's bytes, `width × 4` long, without padding.
    public func row(_ y: Int) -> UnsafeRawBufferPointer {
        precondition(y >= 0 && y < height)
        return UnsafeRawBufferPointer(start: pixels.advanced(by: y * bytesPerRow), count: width * 4)
    }

    /// A tightly packed copy of the pixels (`width × 4` bytes per row), for encoders and comparisons.
    public func packedPixels() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: width * height * 4)
        out.withUnsafeMutableBytes { dst in
            for y in 0..<height {
                dst.baseAddress!.advanced(by: y * width * 4)
                    .copyMemory(from: pixels.advanced(by: y * bytesPerRow), byteCount: width * 4)
            }
        }
        return out
    }

    /// The pixels with straight (not premultiplied) alpha, packed `width × 4` bytes per row: what encoders of
    /// formats that store straight alpha (PNG, WebP) take.
    public func straightAlphaPixels() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: width * height * 4)
        out.withUnsafeMutableBufferPointer { destination in
            for y in 0..<height {
                ipk_unpremultiply_rgba_row(
                    pixels.advanced(by: y * bytesPerRow).assumingMemoryBound(to: UInt8.self),
                    destination.baseAddress! + y * width * 4, width)
            }
        }
        return out
    }

    /// Whether any pixel is not fully opaque.
    public var hasTransparency: Bool {
        for y in 0..<height {
            let row = pixels.advanced(by: y * bytesPerRow).assumingMemoryBound(to: UInt8.self)
            for x in 0..<width where row[x * 4 + 3] != 255 { return true }
        }
        return false
    }
}

/// One premultiplied RGBA pixel.
public struct RGBA: Hashable, Sendable, CustomStringConvertible {
    public var r, g, b, a: UInt8
    public init(r: UInt8, g: UInt8, b: UInt8, a: UInt8) {
        self.r = r; self.g = g; self.b = b; self.a = a
    }
    public var description: String { "rgba(\(r),\(g),\(b),\(a))" }
}
