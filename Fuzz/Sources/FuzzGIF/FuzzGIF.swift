import FuzzSupport
import ImagePipelineKit

// One-shot decodes of arbitrary bytes as GIF through giflib and the compositor that lays frames on the screen.
// The seed corpus (scripts/fuzz.sh) starts the fuzzer from real files, so it mutates valid structure.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGIF(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    FuzzDecoding.decodeOnce(fuzzData(bytes, count), with: GIFDecoder())
    return 0
}
