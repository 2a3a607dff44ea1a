import FuzzSupport
import ImagePipelineKit

// One-shot decodes of arbitrary bytes as baseline, progressive and arithmetic JPEG through libjpeg, with its EXIF APP1 read.
// The seed corpus (scripts/fuzz.sh) starts the fuzzer from real files, so it mutates valid structure.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJPEG(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    FuzzDecoding.decodeOnce(fuzzData(bytes, count), with: JPEGDecoder())
    return 0
}
