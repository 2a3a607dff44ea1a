#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import PipelineLocking

/// Recycles large pixel buffers so decodes do not pay first-touch page faults.
///
/// Every page of freshly mapped memory faults the first time it is written, so decoding a large photo into a
/// new buffer costs close to twice what decoding it into a reused one does. Thumbnails pay too: glibc serves
/// blocks above its mmap threshold (128 KiB) with fresh pages, so pooling only the megabyte-sized buffers
/// leaves most of a cold scroll's page faults in place; pooling down to ``minimumPooledBytes`` removes many of
/// them and saves CPU time. Smaller blocks glibc reuses itself. The pool is bounded by ``capacity`` bytes and hands a buffer out only
/// when it is no more than twice the size asked for, so a thumbnail never pins a full-size buffer.
public final class BitmapBufferPool: Sendable {
    /// The pool every ``Bitmap`` uses.
    public static let shared = BitmapBufferPool(capacity: 128 << 20)

    /// Buffers smaller than this are allocated and freed directly (glibc's default mmap threshold).
    public static let minimumPooledBytes = 128 << 10

    /// Row and buffer alignment in bytes: 16 RGBA pixels, a cache line, what SIMD code wants.
    public static let alignment = 64

    /// A block of pixel memory. Exactly one owner at a time: the pool's free list or one bitmap.
    struct Buffer: @unchecked Sendable {
        // @unchecked: the pointer is handed over, never shared; whoever holds the Buffer owns the bytes.
        let pointer: UnsafeMutableRawPointer
        let capacity: Int
        func deallocate() { pointer.deallocate() }
    }

    private struct State {
        var free: [Buffer] = []
        var retainedBytes = 0
    }

    private let state = Locked(State())
    /// Most bytes kept for reuse.
    public let capacity: Int

    public init(capacity: Int) {
        self.capacity = capacity
    }

    /// Bytes currently held for reuse (not in use by any bitmap).
    public var retainedBytes: Int { state.withLock { $0.retainedBytes } }

    /// A 64-byte-aligned buffer of at least `byteCount` bytes, and its real capacity.
    func take(byteCount: Int) -> Buffer {
        if byteCount >= Self.minimumPooledBytes {
            let reused: Buffer? = state.withLock { state in
                var best: Int?
                for (index, entry) in state.free.enumerated()
                where entry.capacity >= byteCount && entry.capacity <= byteCount * 2 {
                    if best == nil || entry.capacity < state.free[best!].capacity { best = index }
                }
                guard let best else { return nil }
                let entry = state.free.remove(at: best)
                state.retainedBytes -= entry.capacity
                return entry
            }
            if let reused { return reused }
        }
        let capacity = max(byteCount, Self.alignment)
        let buffer = Buffer(pointer: .allocate(byteCount: capacity, alignment: Self.alignment), capacity: capacity)
        if capacity >= Self.minimumPooledBytes { Self.prefault(buffer) }
        return buffer
    }

    /// `MADV_POPULATE_WRITE` (Linux 5.14), which Glibc's module does not export.
    private static let populateWrite: Int32 = 23

    #if os(Linux)
    /// The system's page size, asked once.
    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
    #endif

    /// Maps a new buffer's pages in one call. A buffer this large comes from fresh pages, each of which would
    /// otherwise fault when the decoder first writes it: one trap per page. A cold pipeline's first screen
    /// allocates most of its bitmaps this way, and the traps were a quarter of their cost. An older kernel
    /// refuses the advice, and the pages fault as before.
    private static func prefault(_ buffer: Buffer) {
        #if os(Linux)
        let start = (Int(bitPattern: buffer.pointer) + pageSize - 1) & ~(pageSize - 1)
        let end = (Int(bitPattern: buffer.pointer) + buffer.capacity) & ~(pageSize - 1)
        guard end > start, let first = UnsafeMutableRawPointer(bitPattern: start) else { return }
        _ = madvise(first, end - start, populateWrite)
        #endif
    }

    /// Gives a buffer back; it is kept when large enough and the pool has room, freed otherwise.
    func give(_ buffer: Buffer) {
        let capacity = buffer.capacity
        guard capacity >= Self.minimumPooledBytes else {
            buffer.deallocate()
            return
        }
        let evicted: [Buffer] = state.withLock { state in
            var evicted: [Buffer] = []
            // Oldest first out: keep the most recent sizes, which are the likeliest to be asked for again.
            while state.retainedBytes + capacity > self.capacity, !state.free.isEmpty {
                let old = state.free.removeFirst()
                state.retainedBytes -= old.capacity
                evicted.append(old)
            }
            guard capacity <= self.capacity else { return evicted + [buffer] }
            state.free.append(buffer)
            state.retainedBytes += capacity
            return evicted
        }
        evicted.forEach { $0.deallocate() }
    }

    /// Frees every retained buffer (for memory warnings and tests).
    public func drain() {
        let all = state.withLock { state -> [Buffer] in
            defer { state.free.removeAll(); state.retainedBytes = 0 }
            return state.free
        }
        all.forEach { $0.deallocate() }
    }
}
