import ArgumentParser

/// `sample-cli`: the sample program of ImagePipelineKit.
@main
struct SampleCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sample-cli",
        abstract: "ImagePipelineKit's sample program.",
        discussion: """
            Subcommands so far: fetch (through a pipeline with a disk cache), inspect (what the caches \
            hold), decode, bench, serve (the loopback origin the tests use). The scroll simulation arrives \
            with the view helper.
            """,
        subcommands: [FetchCommand.self, InspectCommand.self, DecodeCommand.self, BenchCommand.self,
                      CacheTortureCommand.self, ServeCommand.self]
    )
}
