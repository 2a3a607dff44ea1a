import FuzzSupport
import ImagePipelineKit

// One-shot decodes of arbitrary bytes as AVIF stills and image sequences through libavif.
// The seeds (scripts/fuzz.sh makes them with avifenc) start the fuzzer from real ISO base media structure.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAVIF(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    FuzzDecoding.decodeOnce(fuzzData(bytes, count), with: AVIFDecoder())
    return 0
}
