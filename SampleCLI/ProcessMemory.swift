import Foundation

/// The memory of this process, as Linux and glibc report and bound it: for `sample-cli scroll`'s report and for
/// the allocator policy a memory-constrained app sets.
enum ProcessMemory {
    /// This process's peak resident set (`VmHWM`) since it started or since ``resetPeakResidentBytes()``.
    static func peakResidentBytes() -> Int { statusBytes("VmHWM:") }

    /// This process's resident set now (`VmRSS`).
    static func residentBytes() -> Int { statusBytes("VmRSS:") }

    /// Starts a new peak: Linux resets `VmHWM` to the resident set now when `5` is written to `clear_refs`
    /// (since 4.0), so that each run of `--compare` reports its own peak, not the largest so far.
    static func resetPeakResidentBytes() {
        try? Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/self/clear_refs"))
    }

    /// Asks glibc to give the memory it keeps from freed allocations back to the system (`malloc_trim(0)`,
    /// looked up at run time: Swift's Glibc module does not export `malloc.h`).
    static func returnFreedMemory() {
        typealias MallocTrim = @convention(c) (Int) -> Int32
        // RTLD_DEFAULT: search every object loaded in the process.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
    }

    private static func statusBytes(_ field: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }),
              let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kilobytes * 1024
    }

    /// What a memory-constrained app on Linux asks of glibc before it starts loading images: at most two
    /// allocator arenas (glibc makes up to eight per core, one per thread that allocates, and each keeps what its
    /// threads freed), and large buffers (decoded bitmaps, a progressive JPEG's coefficients) mapped and unmapped
    /// on their own from 128 KiB up, instead of glibc raising that threshold to the largest buffer freed so far
    /// and carving later ones out of the arenas, where they stay when freed. The scroll's peak fell by about
    /// 70 MiB with both (docs/scroll-simulation.md).
    static func useCompactAllocator() {
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        let arenaMax: Int32 = -8, mmapThreshold: Int32 = -3   // M_ARENA_MAX, M_MMAP_THRESHOLD in malloc.h
        _ = mallopt(arenaMax, 2)
        _ = mallopt(mmapThreshold, 128 * 1024)
    }
}
