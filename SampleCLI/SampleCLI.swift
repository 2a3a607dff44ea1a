import ArgumentParser
import ImagePipelineKit

/// `sample-cli`: the sample program of ImagePipelineKit.
@main
struct SampleCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sample-cli",
        abstract: "ImagePipelineKit's sample program.",
        discussion: """
            scroll simulates a scrolling grid of image views against an embedded origin (what `make demo` \
            runs); fetch goes through a pipeline with a disk cache; inspect lists what the caches hold; \
            decode, bench, serve (the loopback origin the tests use); fleet runs worker processes against one \
            origin with and without a Redis shared tier.

            Every command that reports (bench included) takes --json (the JSON on standard output, the text on standard error) and \
            --json-file FILE (the JSON to a file). Exit status: 0 on success, 1 when the work failed (one line on \
            standard error says why), 64 for a usage error (with the usage text).
            """,
        version: LibraryVersion.version,
        subcommands: [ScrollCommand.self, FetchCommand.self, InspectCommand.self, DecodeCommand.self, BenchCommand.self,
                      CacheTortureCommand.self, ServeCommand.self, FleetCommand.self, FleetWorkerCommand.self]
    )
}
