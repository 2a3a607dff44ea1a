#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PipelineLocking

/// Why an ``ImageTable`` could not be opened.
public enum ImageTableError: Error, Hashable, Sendable {
    /// `side` or `capacity` is not positive, or the file would be larger than the address space allows.
    case invalidGeometry(side: Int, capacity: Int)
    /// The file could not be opened, sized or mapped (`errno`).
    case fileSystem(operation: String, errno: Int32)
}

/// Decoded images of one size class kept in one memory-mapped file, Fast Image Cache style
/// (a hit must take about a microsecond, and the file is mapped once per table, never per hit): a hit hands
/// out a ``Bitmap`` that views the mapped pixels, with no decode and no copy.
///
/// The file has `capacity` slots; each holds one image of at most `side × side` pixels (premultiplied RGBA, rows
/// aligned to 64 bytes) behind a one-page header that names its identifier and size and carries a checksum of
/// its pixels. The whole file is mapped once, when the table opens; never per hit. Opening reads only the
/// headers; a slot's pixels are checked against its checksum on its first hit in the process, so a slot torn
/// by a crash in the middle of a write is found, dropped and never shown. A write first invalidates the slot's
/// header, then writes the pixels, then the header: a crash at any moment leaves either the old image, no
/// image, or the new one.
///
/// A slot is never overwritten while a view of it is alive: the view holds a lease. When every slot is leased
/// or the image is too large, ``store(_:identifier:)`` returns `false`. Least recently hit slots are reused
/// first. Thread-safe; one lock guards the index, never held while pixels are copied or checked.
///
/// ``RenditionTables`` makes tables a tier of an ``ImagePipeline``; a table also works on its own.
public final class ImageTable: @unchecked Sendable {
    // @unchecked: `base` points into a mapping that lives as long as the table; each slot's bytes are written
    // only by the store that reserved the slot (under `state`'s lock) and read only under a lease, which keeps
    // stores away from it.

    /// The largest width and height a slot holds.
    public let side: Int
    /// How many images the table holds.
    public let capacity: Int
    /// Bytes from one pixel row to the next in every slot.
    public let bytesPerRow: Int
    private let slotPixelBytes: Int
    private let slotBytes: Int
    private let fileBytes: Int
    private let base: UnsafeMutableRawPointer
    /// The file, kept open: pixels are written with `pwrite`, not through the mapping (see `store`).
    private let descriptor: Int32
    private let state: Locked<State>

    private static let pageBytes = 4096
    /// "IPKTABL1": the file's and each valid slot's magic number.
    private static let magic: UInt64 = 0x314C_4241_544B_5049
    /// Identifiers up to this many UTF-8 bytes fit in a slot header.
    public static let maxIdentifierBytes = pageBytes - SlotHeader.identifierOffset

    private struct Slot {
        var identifier: String?
        var lastHit: UInt64 = 0
        var leases = 0
        var verified = false
        var generation: UInt64 = 0
    }

    private struct State {
        var index: [String: Int] = [:]
        var slots: [Slot]
        var clock: UInt64 = 0
        var nextGeneration: UInt64 = 1
        /// Slots being written (reserved by a store, not yet readable).
        var writing: Set<Int> = []
    }

    /// Opens the table in `path`, creating or re-initialising the file when it does not have this geometry.
    public init(path: String, side: Int, capacity: Int) throws(ImageTableError) {
        guard side > 0, side <= 8192, capacity > 0, capacity <= 1 << 20 else {
            throw .invalidGeometry(side: side, capacity: capacity)
        }
        self.side = side
        self.capacity = capacity
        bytesPerRow = Bitmap.alignedBytesPerRow(forWidth: side)
        slotPixelBytes = (bytesPerRow * side + Self.pageBytes - 1) / Self.pageBytes * Self.pageBytes
        slotBytes = Self.pageBytes + slotPixelBytes
        let (total, overflow) = slotBytes.multipliedReportingOverflow(by: capacity)
        guard !overflow, total <= Int.max - Self.pageBytes else { throw .invalidGeometry(side: side, capacity: capacity) }
        fileBytes = Self.pageBytes + total

        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .fileSystem(operation: "open", errno: errno) }
        var opened = false
        defer { if !opened { close(descriptor) } }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .fileSystem(operation: "fstat", errno: errno) }
        let existing = Int(info.st_size)
        if existing != fileBytes {
            // Another geometry, or a new file: start empty (ftruncate to 0 first so every header reads zero).
            guard ftruncate(descriptor, 0) == 0, ftruncate(descriptor, off_t(fileBytes)) == 0 else {
                throw .fileSystem(operation: "ftruncate", errno: errno)
            }
        }
        guard let mapped = mmap(nil, fileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0),
              mapped != MAP_FAILED else { throw .fileSystem(operation: "mmap", errno: errno) }
        base = mapped
        self.descriptor = descriptor
        opened = true
        var initial = State(slots: Array(repeating: Slot(), count: capacity))
        if existing == fileBytes, let geometry = Self.readFileHeader(base), geometry == (side, capacity) {
            Self.loadIndex(base: base, slotBytes: slotBytes, capacity: capacity, side: side, into: &initial)
        } else {
            Self.writeFileHeader(base, side: side, capacity: capacity)
        }
        state = Locked(initial)
    }

    deinit {
        munmap(base, fileBytes)
        close(descriptor)
    }

    /// How many images the table holds now.
    public var count: Int { state.withLock { $0.index.count } }

    // MARK: - Hits

    /// The image stored for `identifier`, as a view of the mapped pixels, or `nil`.
    ///
    /// The first hit on a slot in this process checks its pixels against the header's checksum (a slot whose
    /// write a crash cut short is dropped here); later hits take the lock, a lease and return, without touching
    /// the pixels.
    public func image(for identifier: String) -> Bitmap? {
        guard let (slot, width, height, verified) = state.withLock({ state -> (Int, Int, Int, Bool)? in
            guard let slot = state.index[identifier] else { return nil }
            state.clock += 1
            state.slots[slot].lastHit = state.clock
            state.slots[slot].leases += 1
            let header = SlotHeader(base: slotBase(slot))
            return (slot, header.width, header.height, state.slots[slot].verified)
        }) else { return nil }
        let lease = ImageTableLease(table: self, slot: slot)
        if !verified {
            let header = SlotHeader(base: slotBase(slot))
            guard header.checksum == checksum(slot: slot, height: height) else {
                state.withLock { state in
                    if state.index[identifier] == slot { state.index[identifier] = nil }
                    state.slots[slot].identifier = nil
                    SlotHeader.invalidate(slotBase(slot))
                }
                return nil
            }
            state.withLock { $0.slots[slot].verified = true }
        }
        return Bitmap(viewing: slotBase(slot) + Self.pageBytes, width: width, height: height, bytesPerRow: bytesPerRow,
                      owner: lease)
    }

    // MARK: - Stores

    /// Copies `bitmap` into a slot for `identifier`, replacing its earlier image. `false` when the bitmap is
    /// larger than `side` on either axis, the identifier longer than ``maxIdentifierBytes``, or every slot is
    /// leased to a live view.
    @discardableResult
    public func store(_ bitmap: Bitmap, identifier: String) -> Bool {
        let identifierBytes = Array(identifier.utf8)
        guard bitmap.width <= side, bitmap.height <= side, identifierBytes.count <= Self.maxIdentifierBytes else {
            return false
        }
        guard let (slot, generation) = state.withLock({ state in reserveSlot(for: identifier, in: &state) }) else {
            return false
        }
        let slotStart = slotBase(slot)
        SlotHeader.invalidate(slotStart)
        guard let checksum = writePixels(of: bitmap, toSlot: slot) else {
            state.withLock { _ = $0.writing.remove(slot) }
            return false
        }
        SlotHeader.write(slotStart, identifier: identifierBytes, width: bitmap.width, height: bitmap.height,
                         generation: generation, checksum: checksum)
        state.withLock { state in
            state.writing.remove(slot)
            state.slots[slot] = Slot(identifier: identifier, lastHit: state.clock, leases: 0, verified: true,
                                     generation: generation)
            if let previous = state.index[identifier], previous != slot {
                state.slots[previous].identifier = nil
                SlotHeader.invalidate(slotBase(previous))
            }
            state.index[identifier] = slot
        }
        return true
    }

    /// Writes the bitmap's rows at the table's row stride (padding zeroed) into the slot with `pwrite`, and
    /// returns the checksum of what it wrote; `nil` when the write failed.
    ///
    /// Not through the mapping: a store touching a slot's pages there first faults each one in, and a page
    /// of a sparse file is zeroed before the copy overwrites it (with readahead zeroing pages beyond): in a
    /// cold `sample-cli scroll` those faults were 8% of all CPU time. `pwrite` of whole pages fills the page
    /// cache directly; the mapping sees the same pages.
    ///
    /// A bitmap whose rows already have the slot's layout (as wide as the table, no padding) is written as it is;
    /// any other is packed into a pooled buffer first.
    private func writePixels(of bitmap: Bitmap, toSlot slot: Int) -> UInt64? {
        let byteCount = bytesPerRow * bitmap.height
        let rowBytes = bitmap.width * 4
        let fileOffset = slotBase(slot) + Self.pageBytes - base
        if rowBytes == bytesPerRow, bitmap.bytesPerRow == bytesPerRow {
            return bitmap.withUnsafeBytes { write($0, at: fileOffset) }
        }
        let buffer = BitmapBufferPool.shared.take(byteCount: byteCount)
        defer { BitmapBufferPool.shared.give(buffer) }
        bitmap.withUnsafeBytes { source in
            for y in 0..<bitmap.height {
                let row = buffer.pointer + y * bytesPerRow
                row.copyMemory(from: source.baseAddress! + y * bitmap.bytesPerRow, byteCount: rowBytes)
                if rowBytes < bytesPerRow { memset(row + rowBytes, 0, bytesPerRow - rowBytes) }
            }
        }
        return write(UnsafeRawBufferPointer(start: buffer.pointer, count: byteCount), at: fileOffset)
    }

    /// `pwrite`s all of `bytes` at `fileOffset` and returns their checksum; `nil` when the write failed.
    private func write(_ bytes: UnsafeRawBufferPointer, at fileOffset: Int) -> UInt64? {
        var offset = 0
        while offset < bytes.count {
            let count = pwrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset, off_t(fileOffset + offset))
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            offset += count
        }
        return Self.checksum(bytes)
    }

    // MARK: - Removal

    /// Forgets every image whose identifier matches `predicate`. Views already handed out stay intact (their
    /// slots are only reused once the views are gone); later hits miss.
    public func removeAll(where predicate: (String) -> Bool) {
        state.withLock { state in
            for (identifier, slot) in state.index where predicate(identifier) {
                state.index[identifier] = nil
                state.slots[slot].identifier = nil
                SlotHeader.invalidate(slotBase(slot))
            }
        }
    }

    /// Under the lock: the slot to write `identifier` into (its own when no view holds it, else a free one,
    /// else the least recently hit unleased one), taken out of the index while it is written.
    private func reserveSlot(for identifier: String, in state: inout State) -> (Int, UInt64)? {
        var chosen: Int?
        if let own = state.index[identifier], state.slots[own].leases == 0 {
            chosen = own
        } else {
            var oldest = UInt64.max
            for (slot, entry) in state.slots.enumerated() where entry.leases == 0 && !state.writing.contains(slot) {
                if entry.identifier == nil { chosen = slot; break }
                if entry.lastHit < oldest { oldest = entry.lastHit; chosen = slot }
            }
        }
        guard let slot = chosen else { return nil }
        if let evicted = state.slots[slot].identifier, state.index[evicted] == slot { state.index[evicted] = nil }
        state.slots[slot].identifier = nil
        state.writing.insert(slot)
        defer { state.nextGeneration += 1 }
        return (slot, state.nextGeneration)
    }

    /// Ends a view's lease (its ``Bitmap`` went away).
    fileprivate func release(slot: Int) {
        state.withLock { $0.slots[slot].leases -= 1 }
    }

    // MARK: - Layout

    private func slotBase(_ slot: Int) -> UnsafeMutableRawPointer {
        base + Self.pageBytes + slot * slotBytes
    }

    /// A 64-bit multiply-xorshift hash of the slot's rows: catches torn writes, not attacks.
    private func checksum(slot: Int, height: Int) -> UInt64 {
        Self.checksum(UnsafeRawBufferPointer(start: slotBase(slot) + Self.pageBytes, count: bytesPerRow * height))
    }

    private static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ UInt64(bytes.count)
        var offset = 0
        while offset + 8 <= bytes.count {
            hash = (hash ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0x0000_0100_0000_01b3
            hash ^= hash >> 29
            offset += 8
        }
        return hash
    }

    private static func writeFileHeader(_ base: UnsafeMutableRawPointer, side: Int, capacity: Int) {
        base.storeBytes(of: magic, toByteOffset: 0, as: UInt64.self)
        base.storeBytes(of: UInt64(side), toByteOffset: 8, as: UInt64.self)
        base.storeBytes(of: UInt64(capacity), toByteOffset: 16, as: UInt64.self)
    }

    private static func readFileHeader(_ base: UnsafeMutableRawPointer) -> (Int, Int)? {
        guard base.load(fromByteOffset: 0, as: UInt64.self) == magic else { return nil }
        return (Int(base.load(fromByteOffset: 8, as: UInt64.self)), Int(base.load(fromByteOffset: 16, as: UInt64.self)))
    }

    /// Reads every slot header (not the pixels); of two slots naming one identifier, the later write wins.
    private static func loadIndex(base: UnsafeMutableRawPointer, slotBytes: Int, capacity: Int, side: Int,
                                  into state: inout State) {
        for slot in 0..<capacity {
            let header = SlotHeader(base: base + pageBytes + slot * slotBytes)
            guard header.isValid, header.width > 0, header.width <= side, header.height > 0, header.height <= side,
                  let identifier = header.identifier else { continue }
            state.nextGeneration = max(state.nextGeneration, header.generation + 1)
            if let other = state.index[identifier], state.slots[other].generation > header.generation { continue }
            if let other = state.index[identifier] { state.slots[other].identifier = nil }
            state.index[identifier] = slot
            state.slots[slot].identifier = identifier
            state.slots[slot].generation = header.generation
        }
    }
}

/// A slot's header, read and written in place at the start of the slot's first page.
private struct SlotHeader {
    static let identifierOffset = 48
    let base: UnsafeMutableRawPointer

    var isValid: Bool { base.load(fromByteOffset: 0, as: UInt64.self) == ImageTable.slotMagic }
    var width: Int { Int(base.load(fromByteOffset: 8, as: UInt32.self)) }
    var height: Int { Int(base.load(fromByteOffset: 12, as: UInt32.self)) }
    var generation: UInt64 { base.load(fromByteOffset: 16, as: UInt64.self) }
    var checksum: UInt64 { base.load(fromByteOffset: 24, as: UInt64.self) }
    var identifier: String? {
        let length = Int(base.load(fromByteOffset: 32, as: UInt32.self))
        guard length <= ImageTable.maxIdentifierBytes else { return nil }
        return String(validating: UnsafeRawBufferPointer(start: base + Self.identifierOffset, count: length), as: UTF8.self)
    }

    /// Makes the slot read as empty; done first by every write.
    static func invalidate(_ base: UnsafeMutableRawPointer) {
        base.storeBytes(of: 0, toByteOffset: 0, as: UInt64.self)
    }

    /// Writes every field, the magic number last: until then the slot reads as empty.
    static func write(_ base: UnsafeMutableRawPointer, identifier: [UInt8], width: Int, height: Int, generation: UInt64,
                      checksum: UInt64) {
        base.storeBytes(of: UInt32(width), toByteOffset: 8, as: UInt32.self)
        base.storeBytes(of: UInt32(height), toByteOffset: 12, as: UInt32.self)
        base.storeBytes(of: generation, toByteOffset: 16, as: UInt64.self)
        base.storeBytes(of: checksum, toByteOffset: 24, as: UInt64.self)
        base.storeBytes(of: UInt32(identifier.count), toByteOffset: 32, as: UInt32.self)
        identifier.withUnsafeBytes { bytes in
            if let start = bytes.baseAddress { (base + identifierOffset).copyMemory(from: start, byteCount: bytes.count) }
        }
        base.storeBytes(of: ImageTable.slotMagic, toByteOffset: 0, as: UInt64.self)
    }
}

extension ImageTable {
    /// "IPKSLOT1": a slot header that holds an image.
    fileprivate static let slotMagic: UInt64 = 0x3154_4F4C_534B_5049
}

/// Keeps one slot of a table from being overwritten while a view of it lives.
private final class ImageTableLease {
    let table: ImageTable
    let slot: Int

    init(table: ImageTable, slot: Int) {
        self.table = table
        self.slot = slot
    }

    deinit { table.release(slot: slot) }
}
