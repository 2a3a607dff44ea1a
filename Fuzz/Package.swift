// swift-tools-version: 6.1
import PackageDescription

// libFuzzer targets for ImagePipelineKit, in a package of their own so that the main package's build, tests
// and DocC never see fuzzer flags. scripts/fuzz.sh builds them with the instrumentation flags on the command
// line (not here), because only command-line flags reach the library's own modules and C: flags declared in
// this manifest would instrument the harnesses alone, and libFuzzer would be blind to the code under test.
let fuzzTargets = ["FuzzJPEG", "FuzzPNG", "FuzzGIF", "FuzzWebP", "FuzzAVIF", "FuzzJXL", "FuzzEXIF", "FuzzIncremental", "FuzzHTTPValues",
                   "FuzzThumborURL"]

let package = Package(
    name: "ImagePipelineKitFuzz",
    dependencies: [.package(name: "ImagePipelineKit", path: "..")],
    targets: [
        // What every decoder target shares: the small limits, the invariants checked on every result.
        .target(name: "FuzzSupport", dependencies: [.product(name: "ImagePipelineKit", package: "ImagePipelineKit")]),
    ] + fuzzTargets.map { name in
        .executableTarget(
            name: name,
            dependencies: ["FuzzSupport", .product(name: "ImagePipelineKit", package: "ImagePipelineKit")]
                + (name == "FuzzThumborURL" ? [.product(name: "ThumborURLs", package: "ImagePipelineKit")] : [])
        )
    },
    swiftLanguageModes: [.v6]
)
