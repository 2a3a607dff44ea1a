import Crypto
import Foundation
import ImagePipelineKit
import NIOCore
import NIOFoundationCompat

/// How an image is laid out in a Redis value: a fixed header (magic `IPKV`, format version, flags, the lengths
/// of the metadata and the image, a 64-bit checksum of both (`ContentChecksum`)), an HMAC-SHA256 of all of that with
/// the fleet's secret when one is configured, then the metadata (JSON, naming the key it was stored under) and the
/// image bytes.
///
/// A value that fails any check is rejected: too short, another magic or version, lengths that do not add up
/// (truncated), a checksum that does not match (corrupt), no signature or a wrong one where the fleet signs,
/// or a key other than the one asked for (a value copied under another key).
enum SharedValueFormat {
    static let magic: [UInt8] = Array("IPKV".utf8)
    static let version: UInt8 = 1
    /// magic, version, flags, two reserved bytes, metadata length, image length, checksum.
    static let headerBytes = 4 + 1 + 1 + 2 + 4 + 4 + 8
    static let signatureBytes = 32
    static let signedFlag: UInt8 = 1
    /// Metadata is a few hundred bytes; more is not a value of ours.
    static let maxMetadataBytes = 16 << 10

    /// What the metadata says about the image.
    struct Metadata: Codable {
        var key: String
        var url: String
        var width: Int
        var height: Int
        var contentType: String?
        var isAnimated: Bool
        var eTag: String?
        var lastModified: String?
        var timeToLive: Double
    }

    /// `value` laid out for `key`, signed with `secret` when there is one.
    static func encode(_ value: SharedCacheValue, key: SharedCacheKey, secret: SymmetricKey?) throws -> ByteBuffer {
        let metadata = try JSONEncoder().encode(Metadata(
            key: key.rawValue, url: value.url.absoluteString, width: value.dimensions.width, height: value.dimensions.height,
            contentType: value.contentType, isAnimated: value.isAnimated, eTag: value.eTag, lastModified: value.lastModified,
            timeToLive: value.timeToLive))
        var checksum = ContentChecksum()
        metadata.withUnsafeBytes { checksum.update($0) }
        value.data.withUnsafeBytes { checksum.update($0) }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(headerBytes + signatureBytes + metadata.count + value.data.count)
        buffer.writeBytes(magic)
        buffer.writeInteger(version)
        buffer.writeInteger(secret == nil ? 0 : signedFlag)
        buffer.writeInteger(UInt16(0))
        buffer.writeInteger(UInt32(metadata.count))
        buffer.writeInteger(UInt32(value.data.count))
        buffer.writeInteger(checksum.finalize())
        if let secret {
            var mac = HMAC<SHA256>(key: secret)
            buffer.withUnsafeReadableBytes { mac.update(data: $0) }
            mac.update(data: metadata)
            mac.update(data: value.data)
            buffer.writeBytes(mac.finalize())
        }
        buffer.writeBytes(metadata)
        buffer.writeBytes(value.data)
        return buffer
    }

    /// The value in `buffer` when it passes every check for `key` (and `secret`), else why not.
    static func decode(_ buffer: ByteBuffer, key: SharedCacheKey, secret: SymmetricKey?) -> Result<SharedCacheValue, Rejection> {
        var reader = buffer
        guard reader.readableBytes >= headerBytes, let header = reader.getSlice(at: reader.readerIndex, length: headerBytes),
              reader.readBytes(length: 4) == magic else { return .failure(.notOurs) }
        guard reader.readInteger(as: UInt8.self) == version else { return .failure(.unsupportedVersion) }
        let flags = reader.readInteger(as: UInt8.self) ?? 0
        reader.moveReaderIndex(forwardBy: 2)
        guard let metadataLength = reader.readInteger(as: UInt32.self).map(Int.init),
              let imageLength = reader.readInteger(as: UInt32.self).map(Int.init),
              let checksum = reader.readInteger(as: UInt64.self) else { return .failure(.notOurs) }
        let isSigned = flags & signedFlag != 0
        var signature: [UInt8]?
        if isSigned {
            signature = reader.readBytes(length: signatureBytes)
            guard signature != nil else { return .failure(.truncated) }
        }
        guard metadataLength <= maxMetadataBytes, reader.readableBytes == metadataLength + imageLength else {
            return .failure(reader.readableBytes < metadataLength + imageLength ? .truncated : .lengthMismatch)
        }
        guard let metadataBytes = reader.readData(length: metadataLength), let image = reader.readData(length: imageLength) else {
            return .failure(.truncated)
        }
        if let secret {
            guard let signature else { return .failure(.unsigned) }
            var mac = HMAC<SHA256>(key: secret)
            header.withUnsafeReadableBytes { mac.update(data: $0) }
            mac.update(data: metadataBytes)
            mac.update(data: image)
            // swift-crypto's comparison of a code with bytes takes the same time however far they match, so how
            // much of a forged signature was right does not show in the timing.
            guard mac.finalize() == signature else { return .failure(.badSignature) }
        } else {
            // A verified signature covers every byte the checksum covers: the checksum is checked where none is.
            var digest = ContentChecksum()
            metadataBytes.withUnsafeBytes { digest.update($0) }
            image.withUnsafeBytes { digest.update($0) }
            guard digest.finalize() == checksum else { return .failure(.checksumMismatch) }
        }
        guard let metadata = try? JSONDecoder().decode(Metadata.self, from: metadataBytes),
              let url = URL(string: metadata.url), metadata.width >= 0, metadata.height >= 0 else {
            return .failure(.badMetadata)
        }
        guard metadata.key == key.rawValue else { return .failure(.foreignKey) }
        return .success(SharedCacheValue(
            data: image, url: url, dimensions: PixelSize(width: metadata.width, height: metadata.height),
            contentType: metadata.contentType, isAnimated: metadata.isAnimated, eTag: metadata.eTag,
            lastModified: metadata.lastModified, timeToLive: metadata.timeToLive))
    }

    /// Why a value was not served.
    enum Rejection: String, Error {
        case notOurs, unsupportedVersion, truncated, lengthMismatch, checksumMismatch, unsigned, badSignature
        case badMetadata, foreignKey
    }
}
