import ArgumentParser
import Dispatch
import ImagePipelineKit

/// `--thread-per-fetch`, for the commands that run a pipeline: each fetch's queue on a thread of its own instead
/// of the shared utility pool that fetches run on by default.
struct FetchQueueOption: ParsableArguments {
    @Flag(help: "Give each fetch's queue a thread of its own whenever it has work (GlobalConfiguration.fetchQueueTarget = nil) instead of running the fetches on libdispatch's utility pool, a thread per core, as they do by default.")
    var threadPerFetch = false

    /// Sets `configuration`'s fetch queue target when the flag is given.
    func apply(to configuration: GlobalConfiguration) {
        if threadPerFetch { configuration.fetchQueueTarget = nil }
    }
}
