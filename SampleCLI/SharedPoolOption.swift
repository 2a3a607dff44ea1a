import ArgumentParser
import Dispatch
import ImagePipelineKit

/// `--shared-pool`, for the commands that run a pipeline: the fetches' queues on libdispatch's utility pool, as
/// `image-service` runs them, instead of a thread of their own each.
struct SharedPoolOption: ParsableArguments {
    @Flag(help: "Run the fetches' queues on libdispatch's utility pool, a thread per core (GlobalConfiguration.fetchQueueTarget), as image-service does; by default each fetch's queue takes a thread of its own.")
    var sharedPool = false

    /// Sets `configuration`'s fetch queue target when the flag is given.
    func apply(to configuration: GlobalConfiguration) {
        if sharedPool { configuration.fetchQueueTarget = .global(qos: .utility) }
    }
}
