import FuzzSupport
@testable import ImagePipelineKit

// The EXIF block reader on its own (the JPEG decoder hands it every APP1 payload), so the fuzzer spends its
// time on TIFF structure instead of first having to build a JPEG around it. The input is the block as a
// container would carry it: `Exif\0\0` and a TIFF header, or the TIFF header alone (PNG eXIf, WebP EXIF).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEXIF(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    let orientation = EXIFOrientation.read(from: fuzzData(bytes, count))
    // A malformed block must read as `up`, never as a value outside EXIF's eight.
    if !(1...8).contains(orientation.rawValue) { fatalError("orientation \(orientation.rawValue)") }
    return 0
}
