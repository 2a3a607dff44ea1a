import Foundation
@testable import ImagePipelineKit

/// A test file system that changes some operations (a full disk, a write held mid-way, a probe of the disk
/// lock) and does the rest with plain POSIX calls.
protocol ForwardingCacheFileSystem: CacheFileSystem {}

extension ForwardingCacheFileSystem {
    private var posix: POSIXCacheFileSystem { POSIXCacheFileSystem() }
    func write(_ data: Data, to path: String) throws(DiskCacheError) { try posix.write(data, to: path) }
    func rename(_ source: String, to destination: String) throws(DiskCacheError) { try posix.rename(source, to: destination) }
    func remove(_ path: String) { posix.remove(path) }
    func read(_ path: String) throws(DiskCacheError) -> (data: Data, inode: UInt64) { try posix.read(path) }
    func inode(of path: String) -> UInt64? { posix.inode(of: path) }
    func createDirectory(_ path: String) throws(DiskCacheError) { try posix.createDirectory(path) }
    func contentsOfDirectory(_ path: String) -> [String] { posix.contentsOfDirectory(path) }
    func markModified(_ path: String) { posix.markModified(path) }
}

/// What the disk cache suites store: images of a byte pattern that differs by `seed`.
protocol DiskCacheFixtures {}

extension DiskCacheFixtures {
    func image(_ bytes: Int, width: Int = 100, seed: UInt8 = 1, url: String = "http://t/a", ttl: TimeInterval = 3600,
               at date: Date = Date()) -> CachedImageData {
        CachedImageData(data: Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }), url: URL(string: url)!,
                        dimensions: PixelSize(width: width, height: width), timeToLive: ttl, lastAccess: date)
    }
}
