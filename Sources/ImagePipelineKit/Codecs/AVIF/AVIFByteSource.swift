import CAVIF
import Foundation

/// The bytes of one AVIF as they arrive, offered to libavif through its `avifIO` interface.
///
/// libavif asks for ranges by offset; a range that has not arrived yet is answered "waiting on I/O", which
/// makes libavif stop and let us call again once more bytes are in. That is how a parse, and then each
/// frame, happens as soon as its bytes are here (an animation's first frame long before its last). Once
/// ``isFinal`` is set a short range is handed over as it is, and libavif reports the file as truncated.
///
/// libavif copies what it keeps (`persistent` is false), so the storage may move between calls. Not
/// thread-safe: it belongs to one decoding session.
final class AVIFByteSource {
    private var storage: UnsafeMutableRawPointer?
    private var capacity = 0
    /// Bytes received so far.
    private(set) var count = 0
    /// Whether no more bytes will come.
    var isFinal = false
    /// The `avifIO` handed to the decoder; it stays ours (no destroy function), freed in `deinit`.
    let io: UnsafeMutablePointer<avifIO>

    /// - Parameter sizeHint: an upper bound on the file's size, which libavif uses to refuse absurd boxes.
    init(sizeHint: Int) {
        io = .allocate(capacity: 1)
        io.initialize(to: avifIO(
            destroy: nil, read: avifByteSourceRead, write: nil, sizeHint: UInt64(max(sizeHint, 1)),
            persistent: 0, data: nil))
        io.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        io.deinitialize(count: 1)
        io.deallocate()
        free(storage)
    }

    /// Adds `data` at the end.
    /// - Throws: ``ImageCodecError/limitExceeded(_:)`` when the memory cannot be had.
    func append(_ data: Data) throws(ImageCodecError) {
        guard !data.isEmpty else { return }
        let needed = count + data.count
        if needed > capacity {
            // Doubling keeps appends of small network chunks linear.
            let newCapacity = max(needed, capacity * 2, 64 << 10)
            guard let grown = realloc(storage, newCapacity) else { throw .limitExceeded(.bytes(newCapacity)) }
            storage = grown
            capacity = newCapacity
        }
        data.withUnsafeBytes { bytes in
            (storage! + count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        }
        count = needed
    }

    /// A view of the bytes received so far (valid until the next ``append(_:)``).
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: storage, count: count))
    }

    /// libavif's read: the range at `offset`, or "waiting" while it has not fully arrived.
    ///
    /// `size` is C's `size_t` seen as `Int`: a box that claims a length above `Int.max` arrives negative, so it is
    /// compared as unsigned. Compared as signed, it would pass as shorter than what is here and go back to libavif
    /// as a huge size, which it would read past the end of the bytes.
    fileprivate func read(offset: UInt64, size: Int, into out: UnsafeMutablePointer<avifROData>) -> avifResult {
        guard offset <= UInt64(count) else { return isFinal ? AVIF_RESULT_IO_ERROR : AVIF_RESULT_WAITING_ON_IO }
        let start = Int(offset)
        let available = UInt(count - start)
        let wanted = UInt(bitPattern: size)
        if available < wanted, !isFinal { return AVIF_RESULT_WAITING_ON_IO }
        out.pointee.data = storage.map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) + start }
        out.pointee.size = Int(min(wanted, available))
        return AVIF_RESULT_OK
    }
}

/// The C entry point of ``AVIFByteSource/read(offset:size:into:)``: `io.data` points at the source.
private let avifByteSourceRead: avifIOReadFunc = { io, readFlags, offset, size, out in
    guard let io, let out, let context = io.pointee.data, readFlags == 0 else { return AVIF_RESULT_IO_ERROR }
    let source = Unmanaged<AVIFByteSource>.fromOpaque(context).takeUnretainedValue()
    return source.read(offset: offset, size: size, into: out)
}
