import NIOCore
import Synchronization

/// The event loops of an ``HTTPClientDownloader``'s client that its downloads start on: the first few of the
/// client's group, taken in turn.
///
/// A download's network work (the request's write, the response's reads, handing its parts over) is a small
/// share of a fetch's CPU, which the decode dominates. Spread over every loop of the group, each burst of
/// downloads wakes every loop's thread, and on a machine whose cores are busy decoding, each woken thread waits
/// for a core and pushes a decode off one. Kept to a quarter of the loops, the same work wakes fewer threads
/// and still leaves each loop most of its time idle.
final class DownloadEventLoops: Sendable {
    private let group: any EventLoopGroup
    private let loops: [any EventLoop]
    private let turn = Atomic<UInt>(0)

    /// The first `count` loops of `group` (all of them when it has fewer; at least one); `nil`: a quarter of
    /// them.
    init(group: any EventLoopGroup, count: Int?) {
        self.group = group
        let all = Array(group.makeIterator())
        loops = Array(all.prefix(max(1, count ?? all.count / 4)))
    }

    /// How many loops downloads start on.
    var count: Int { loops.count }

    /// The loop the next download starts on: the calling thread's, when it is one of the group's loops (the
    /// download then starts in place, with no hop), else the next of ``count`` in turn.
    func next() -> any EventLoop {
        // The group's `any()` is the calling thread's loop when it is one of the group's.
        let current = group.any()
        if current.inEventLoop { return current }
        let turn = turn.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[Int(turn % UInt(loops.count))]
    }
}
