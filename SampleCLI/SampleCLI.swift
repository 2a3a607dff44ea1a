import ArgumentParser

/// `sample-cli`: the sample program of ImagePipelineKit.
@main
struct SampleCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sample-cli",
        abstract: "ImagePipelineKit's sample program.",
        discussion: """
            Subcommands so far: decode, bench. The scroll simulation, fetch, inspect and serve \
            arrive with the pipeline.
            """,
        subcommands: [DecodeCommand.self, BenchCommand.self, CacheTortureCommand.self]
    )
}
