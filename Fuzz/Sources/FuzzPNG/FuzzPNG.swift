import FuzzSupport
import ImagePipelineKit

// One-shot decodes of arbitrary bytes as PNG through libpng, after the IHDR is checked against the limits.
// The seed corpus (scripts/fuzz.sh) starts the fuzzer from real files, so it mutates valid structure.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPNG(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    FuzzDecoding.decodeOnce(fuzzData(bytes, count), with: PNGDecoder())
    return 0
}
