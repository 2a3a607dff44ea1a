import CThreadScheduling

/// Runs a decode with the scheduler time slice that ``GlobalConfiguration/decodeTimeSlice`` asks for.
///
/// A decode keeps a core for milliseconds, while the rest of a fetch is short work handed between threads (a
/// download's bytes, a callback, the next fetch's start). Linux lets the thread running on a core finish its
/// time slice before a thread woken onto that core runs, and the default slice grows with the core count
/// (about 3 ms from 8 cores on): on a busy machine the hand-offs wait behind decodes while other cores idle. A
/// decoding thread that asks for a shorter slice lets them in sooner. Kernels before 6.12 accept the request
/// and ignore it; a thread of a real-time policy is left as it is.
enum DecodeTimeSlice {
    /// Runs `body` with the calling thread asking for `slice`, then asks for what it asked before.
    static func run<Result>(_ slice: Duration?, _ body: () throws -> Result) rethrows -> Result {
        guard let slice else { return try body() }
        var previous: UInt64 = 0
        guard ipk_swap_thread_time_slice(nanoseconds(of: slice), &previous) == 0 else { return try body() }
        defer {
            var replaced: UInt64 = 0
            ipk_swap_thread_time_slice(previous, &replaced)
        }
        return try body()
    }

    /// The slice the calling thread asks for now, in nanoseconds (the kernel's default unless set); `nil`
    /// where the kernel cannot say.
    static var current: UInt64? {
        var slice: UInt64 = 0
        return ipk_thread_time_slice(&slice) == 0 ? slice : nil
    }

    private static func nanoseconds(of duration: Duration) -> UInt64 {
        UInt64(clamping: max(duration.nanoseconds, 1))
    }
}
