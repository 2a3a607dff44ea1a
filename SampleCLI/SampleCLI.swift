import ArgumentParser

/// `sample-cli`: the sample program of ImagePipelineKit.
@main
struct SampleCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sample-cli",
        abstract: "ImagePipelineKit's sample program.",
        discussion: """
            Subcommands so far: decode, bench, serve (the loopback origin the tests use). The scroll \
            simulation, fetch and inspect arrive with the pipeline.
            """,
        subcommands: [DecodeCommand.self, BenchCommand.self, CacheTortureCommand.self, ServeCommand.self]
    )
}
