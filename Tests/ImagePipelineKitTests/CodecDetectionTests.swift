import Foundation
import Testing
@testable import ImagePipelineKit

@Suite("Codec detection (TIP's no match / need more data / match)")
struct CodecDetectionTests {
    static let cases: [(String, any ImageDecoder, [UInt8])] = [
        ("jpeg", JPEGDecoder(), [0xFF, 0xD8, 0xFF, 0xE0]),
        ("png", PNGDecoder(), [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0]),
        ("gif", GIFDecoder(), Array("GIF89a".utf8) + [1]),
        ("webp", WebPDecoder(), Array("RIFF".utf8) + [9, 9, 9, 9] + Array("WEBPVP8 ".utf8)),
    ]

    @Test("Every built-in decoder: a prefix needs more data, the signature matches, anything else does not",
          arguments: 0..<4)
    func detection(_ index: Int) {
        let (name, decoder, bytes) = Self.cases[index]
        #expect(decoder.detect(Data(bytes), isComplete: true) == .match, "\(name)")
        #expect(decoder.detect(Data(bytes.prefix(2)), isComplete: false) == .needMoreData, "\(name)")
        #expect(decoder.detect(Data(bytes.prefix(2)), isComplete: true) == .noMatch, "\(name)")
        #expect(decoder.detect(Data("<html>".utf8), isComplete: false) == .noMatch, "\(name)")
        for (other, _, otherBytes) in Self.cases where other != name {
            #expect(decoder.detect(Data(otherBytes), isComplete: true) == .noMatch, "\(name) claims \(other)")
        }
        #expect(CodecCatalogue.shared.detectType(of: Data(bytes), isComplete: true)?.description == name)
    }
}
