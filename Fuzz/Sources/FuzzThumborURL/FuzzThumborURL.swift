import Foundation
import FuzzSupport
import ImagePipelineKit
import ThumborURLs

// thumbor URL paths as a hostile client sends them: the parser, the signature's text and the geometry worked out
// from a parsed request must never trap, and what they accept must be consistent.
//
// Input: the bytes are the request path. Checked on every accepted path: the signature token decodes or is
// refused without trapping; the signed part parses again, behind `unsafe/`, into the same request; the
// canonical description names the source; and the geometry for a few source sizes is positive (an output over
// the service's pixel limit is refused after this, by the service).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzThumborURL(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    let path = String(decoding: fuzzData(bytes, count), as: UTF8.self)
    guard let parsed = try? ThumborPath.parse(Substring(path)) else { return 0 }
    if case .hmac(let token) = parsed.signature { _ = SignatureText.decode(token) }
    let again = try? ThumborPath.parse(Substring("/unsafe/" + parsed.signedPart))
    precondition(again?.request == parsed.request, "the signed part parses to the same request")
    precondition(parsed.request.canonicalDescription.hasSuffix(parsed.request.source))
    for source in [PixelSize(width: 1, height: 1), PixelSize(width: 1920, height: 1080), PixelSize(width: 7, height: 30_000)] {
        let geometry = ThumbnailGeometry(request: parsed.request, source: source)
        for size in [geometry.scaled, geometry.cropBox, geometry.paddedBox, geometry.output].compactMap({ $0 }) {
            precondition(size.width > 0 && size.height > 0, "a positive size")
        }
    }
    return 0
}
