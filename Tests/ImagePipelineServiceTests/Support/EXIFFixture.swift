import Foundation

/// JPEGs with an EXIF orientation, made by inserting a minimal APP1 segment after the SOI marker.
enum EXIFFixture {
    /// `jpeg` with an EXIF IFD0 holding only Orientation = `orientation` (little-endian TIFF).
    static func withOrientation(_ orientation: UInt16, _ jpeg: Data) throws -> Data {
        var tiff: [UInt8] = Array("II".utf8) + [0x2A, 0x00, 0x08, 0x00, 0x00, 0x00]    // header, IFD0 at 8
        tiff += [0x01, 0x00]                                                             // one entry
        tiff += [0x12, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00]                         // 0x0112 SHORT ×1
        tiff += [UInt8(orientation & 0xFF), UInt8(orientation >> 8), 0x00, 0x00]
        tiff += [0x00, 0x00, 0x00, 0x00]                                                 // no next IFD
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        let length = payload.count + 2
        let segment: [UInt8] = [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
        guard jpeg.starts(with: [0xFF, 0xD8]) else { throw CocoaError(.fileReadCorruptFile) }
        return Data([0xFF, 0xD8] + segment) + jpeg.dropFirst(2)
    }
}
