import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The file operations the disk cache performs. Tests inject failures (a full disk) through it; everything
/// else uses ``POSIXCacheFileSystem``.
public protocol CacheFileSystem: Sendable {
    /// Makes `path` hold exactly `data`, creating it or writing over the file there (the disk cache writes
    /// over the files of deleted entries). It need not be flushed to the disk: the disk cache checks every
    /// file against the size and checksum its index holds before serving it.
    func write(_ data: Data, to path: String) throws(DiskCacheError)
    /// Atomically replaces `destination` with `source`.
    func rename(_ source: String, to destination: String) throws(DiskCacheError)
    func remove(_ path: String)
    /// The whole file and its inode number, read from one open file (so both describe the same file).
    func read(_ path: String) throws(DiskCacheError) -> (data: Data, inode: UInt64)
    func inode(of path: String) -> UInt64?
    func createDirectory(_ path: String) throws(DiskCacheError)
    func contentsOfDirectory(_ path: String) -> [String]
    /// When `path` was last modified; `nil` when unknown (then the sweep leaves a stray write file alone).
    func modificationDate(of path: String) -> Date?
    /// Sets `path`'s modification time to now, so that the sweeps of other processes on the same directory take
    /// a write file kept for later for one in progress.
    func markModified(_ path: String)
}

extension CacheFileSystem {
    /// Unknown by default: a file system that cannot tell never has another process's write removed.
    public func modificationDate(of path: String) -> Date? { nil }
    /// Nothing by default (the sweep's age test needs ``modificationDate(of:)``, which is unknown by default too).
    public func markModified(_ path: String) {}
}

/// Plain POSIX calls, with short writes and errors checked.
public struct POSIXCacheFileSystem: CacheFileSystem {
    public init() {}

    public func write(_ data: Data, to path: String) throws(DiskCacheError) {
        // Not O_TRUNC: the blocks of a file written over are reused; only a tail past the new length is freed.
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .file(operation: "create", errno: errno) }
        var failure: Int32 = 0
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        // Only a file written over can be longer than the data. Asking its length is much cheaper than a
        // truncate, which the file system treats as a change of the file even when the length stays; a length
        // that cannot be read (-1) truncates as before.
        if failure == 0, lseek(fd, 0, SEEK_END) != off_t(data.count), ftruncate(fd, off_t(data.count)) != 0 {
            failure = errno
        }
        if close(fd) != 0, failure == 0 { failure = errno }
        if failure != 0 {
            unlink(path)
            throw .file(operation: "write", errno: failure)
        }
    }

    public func rename(_ source: String, to destination: String) throws(DiskCacheError) {
        guard Glibc.rename(source, destination) == 0 else { throw .file(operation: "rename", errno: errno) }
    }

    public func remove(_ path: String) {
        unlink(path)
    }

    public func read(_ path: String) throws(DiskCacheError) -> (data: Data, inode: UInt64) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .file(operation: "open", errno: errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .file(operation: "stat", errno: errno) }
        let size = Int(info.st_size)
        var data = Data(count: size)
        var failure: Int32 = 0
        var total = 0
        data.withUnsafeMutableBytes { (bytes: UnsafeMutableRawBufferPointer) in
            while total < size {
                let count = Glibc.read(fd, bytes.baseAddress! + total, size - total)
                if count < 0, errno == EINTR { continue }
                if count <= 0 {
                    failure = count < 0 ? errno : 0
                    return
                }
                total += count
            }
        }
        if failure != 0 { throw .file(operation: "read", errno: failure) }
        if total < size { data.count = total }
        return (data, UInt64(info.st_ino))
    }

    public func inode(of path: String) -> UInt64? {
        var info = stat()
        return stat(path, &info) == 0 ? UInt64(info.st_ino) : nil
    }

    public func createDirectory(_ path: String) throws(DiskCacheError) {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw .file(operation: "create directory", errno: (error as NSError).code == 0 ? EIO : Int32(truncatingIfNeeded: (error as NSError).code))
        }
    }

    public func contentsOfDirectory(_ path: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
    }

    public func markModified(_ path: String) {
        utimensat(AT_FDCWD, path, nil, 0)
    }

    public func modificationDate(of path: String) -> Date? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
    }
}
