import FuzzSupport
import ImagePipelineKit

// One-shot decodes of arbitrary bytes as WebP stills and animations through libwebp.
// The seed corpus (scripts/fuzz.sh) starts the fuzzer from real files, so it mutates valid structure.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebP(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    FuzzDecoding.decodeOnce(fuzzData(bytes, count), with: WebPDecoder())
    return 0
}
