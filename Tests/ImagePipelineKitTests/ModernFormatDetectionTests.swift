import Foundation
import Testing
@testable import ImagePipelineKit

/// AVIF and JPEG XL are recognised by their bytes alone, and a close-delimited AVIF is whole only when its
/// boxes run to the end.
@Suite("AVIF and JPEG XL sniffing by content")
struct ModernFormatDetectionTests {
    /// An `ftyp` box: size, `ftyp`, major brand, minor version 0, compatible brands.
    static func fileType(major: String, compatible: [String]) -> Data {
        var box = Data()
        let size = 16 + 4 * compatible.count
        box += [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
        box += Data("ftyp".utf8) + Data(major.utf8) + [0, 0, 0, 0]
        for brand in compatible { box += Data(brand.utf8) }
        return box
    }

    @Test("ftyp with avif or avis as the major or a compatible brand is AVIF; HEIC's brands are not")
    func avifBrands() {
        let decoder = AVIFDecoder()
        #expect(decoder.detect(Self.fileType(major: "avif", compatible: ["mif1"]), isComplete: true) == .match)
        #expect(decoder.detect(Self.fileType(major: "avis", compatible: []), isComplete: true) == .match)
        #expect(decoder.detect(Self.fileType(major: "mif1", compatible: ["miaf", "avif"]), isComplete: true) == .match)
        #expect(decoder.detect(Self.fileType(major: "heic", compatible: ["mif1", "heic"]), isComplete: true) == .noMatch)
        #expect(decoder.detect(Self.fileType(major: "mif1", compatible: ["miaf", "avif"]).prefix(20), isComplete: false) == .needMoreData)
        #expect(decoder.detect(Data([0, 0, 0]), isComplete: false) == .needMoreData)
        #expect(decoder.detect(Data([0, 0, 0, 0x20, 0x6D]), isComplete: false) == .noMatch)
        #expect(decoder.detect(Data([0xFF, 0xD8, 0xFF, 0xE0]), isComplete: true) == .noMatch)
        let catalogue = CodecCatalogue.shared
        #expect(catalogue.detectType(of: Self.fileType(major: "avif", compatible: []), isComplete: true) == .avif)
        #expect(catalogue.detectType(of: Self.fileType(major: "mif1", compatible: ["avif"]), isComplete: true) == .avif)
        #expect(catalogue.detectType(of: Self.fileType(major: "heic", compatible: ["mif1"]), isComplete: true) == nil)
    }

    @Test("FF 0A and the container signature are JPEG XL; JPEG's FF D8 is not")
    func jxlSignatures() {
        let decoder = JPEGXLDecoder()
        let container = Data([0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A])
        #expect(decoder.detect(Data([0xFF, 0x0A, 0x0F]), isComplete: true) == .match)
        #expect(decoder.detect(container, isComplete: true) == .match)
        #expect(decoder.detect(container.prefix(6), isComplete: false) == .needMoreData)
        #expect(decoder.detect(Data([0xFF, 0xD8, 0xFF]), isComplete: true) == .noMatch)
        #expect(JPEGDecoder().detect(Data([0xFF, 0x0A, 0x0F]), isComplete: true) == .noMatch)
        #expect(CodecCatalogue.shared.detectType(of: Data([0xFF, 0x0A, 0x0F]), isComplete: true) == .jxl)
        #expect(CodecCatalogue.shared.detectType(of: container, isComplete: true) == .jxl)
    }

    @Test("Names, media types and the Accept header's order: avif, jxl, webp, png, jpeg, gif")
    func namesAndAcceptOrder() {
        #expect(ImageType.avif.description == "avif" && ImageType.jxl.description == "jxl")
        #expect(ImageType.avif.mimeType == "image/avif" && ImageType.jxl.mimeType == "image/jxl")
        #expect(CodecCatalogue.shared.acceptHeaderValue
            == "image/avif, image/jxl, image/webp, image/png, image/jpeg, image/gif")
        #expect(CodecCatalogue.shared.properties(for: .avif).contains(.animation))
        #expect(CodecCatalogue.shared.properties(for: .jxl).contains(.progressiveLoading))
    }

    @Test("A generated AVIF is whole only with every byte of its last box",
          .enabled(if: ModernFormatFixtures.hasAVIFTools, ModernFormatFixtures.avifToolsMissing))
    func avifCompleteness() throws {
        let file = try AVIFCodecTests.avif()
        #expect(ImageCompleteness.isComplete(file) == true)
        for cut in [1, 10, file.count / 2, file.count - 40] {
            #expect(ImageCompleteness.isComplete(file.prefix(file.count - cut)) == false, "\(cut) bytes short")
        }
    }
}
