import FuzzSupport
import ImagePipelineKit

// One-shot decodes of arbitrary bytes as JPEG XL codestreams and containers through libjxl.
// The seeds (scripts/fuzz.sh makes them with cjxl) start the fuzzer from real headers and frames.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJXL(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    FuzzDecoding.decodeOnce(fuzzData(bytes, count), with: JPEGXLDecoder())
    return 0
}
