#if canImport(Glibc)
import Glibc
#endif

/// A bitmap still being written: a decoder's output buffer while bytes arrive.
///
/// Decoders write rows into ``pointer`` over many appends; a render copies what is there into a
/// ``Bitmap`` (``snapshot(rows:)``), and the final render takes the buffer over without a copy
/// (``freeze()``). Not thread-safe: it belongs to one decoding session, used from one queue.
final class PixelCanvas {
    let width: Int
    let height: Int
    let bytesPerRow: Int
    private var buffer: BitmapBufferPool.Buffer?

    /// A canvas of `width × height` RGBA pixels with ``Bitmap``'s row alignment. Contents start undefined.
    init(width: Int, height: Int) throws(ImageCodecError) {
        guard width > 0, height > 0, width <= 1 << 20, height <= 1 << 20 else {
            throw .limitExceeded(.dimension(PixelSize(width: width, height: height)))
        }
        bytesPerRow = Bitmap.alignedBytesPerRow(forWidth: width)
        self.width = width
        self.height = height
        buffer = BitmapBufferPool.shared.take(byteCount: bytesPerRow * height)
    }

    deinit {
        if let buffer { BitmapBufferPool.shared.give(buffer) }
    }

    var size: PixelSize { PixelSize(width: width, height: height) }

    /// The first byte of row 0. Invalid after ``freeze()``.
    var pointer: UnsafeMutableRawPointer {
        guard let buffer else { preconditionFailure("a frozen canvas has no pixels") }
        return buffer.pointer
    }

    var isFrozen: Bool { buffer == nil }

    /// Fills every byte with zero: transparent black, what an image shows where no data has arrived.
    func clear() {
        memset(pointer, 0, bytesPerRow * height)
    }

    /// A copy of the first `rows` rows; the rows below are transparent.
    func snapshot(rows: Int) throws -> Bitmap {
        let source = pointer
        let rows = min(max(rows, 0), height)
        return try Bitmap(width: width, height: height) { destination, stride in
            destination.copyMemory(from: source, byteCount: rows * bytesPerRow)
            memset(destination + rows * stride, 0, (height - rows) * stride)
        }
    }

    /// Hands the pixels to a ``Bitmap`` without copying; the canvas is empty afterwards.
    func freeze() -> Bitmap {
        guard let buffer else { preconditionFailure("a canvas freezes once") }
        self.buffer = nil
        return Bitmap(adopting: buffer, width: width, height: height, bytesPerRow: bytesPerRow)
    }
}
