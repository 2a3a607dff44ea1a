import Foundation
import Synchronization
import PipelineLocking

/// The served directory: turns a checked request path into a file's bytes and validators, read from disk
/// for each request (so a file changed between requests is served changed, with a new ETag).
///
/// Runs on NIO's thread pool, never on an event loop: reading and hashing a large file would stall every
/// connection of that loop. Thread-safe: the ETag cache is behind its own lock.
final class OriginDirectory: Sendable {
    /// The directory's canonical path (symbolic links resolved), without a trailing `/`.
    let root: String

    private struct FileIdentity: Hashable {
        var path: String
        var inode: UInt64
        var size: Int
        var modified: Double
    }

    /// ETags of files already hashed, keyed by what would change if the file did.
    private let etags = Locked([FileIdentity: String]())
    private static let etagCacheLimit = 4096

    /// - Throws: ``OriginServerError/notADirectory(_:)`` when `path` is not an existing directory.
    init(path: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw OriginServerError.notADirectory(path)
        }
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().standardizedFileURL.path
        root = resolved.count > 1 && resolved.hasSuffix("/") ? String(resolved.dropLast()) : resolved
    }

    /// The regular file `segments` name under ``root``, or `nil` when there is none, it is not a regular file,
    /// it cannot be read, or a symbolic link takes it outside ``root``.
    func asset(for segments: [String]) -> OriginAsset? {
        guard !segments.isEmpty else { return nil }
        let path = root + "/" + segments.joined(separator: "/")
        // The request path was checked segment by segment; a link inside the directory could still point out.
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        guard resolved.hasPrefix(root == "/" ? "/" : root + "/") else { return nil }
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: resolved),
              attributes[.type] as? FileAttributeType == .typeRegular,
              let data = try? Data(contentsOf: URL(fileURLWithPath: resolved))
        else { return nil }
        let modified = (attributes[.modificationDate] as? Date) ?? Date(timeIntervalSince1970: 0)
        let identity = FileIdentity(
            path: resolved, inode: (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0,
            size: data.count, modified: modified.timeIntervalSince1970)
        let etag = etags.withLock { $0[identity] } ?? {
            let etag = OriginAsset.derivedETag(for: data)
            etags.withLock { cache in
                if cache.count >= Self.etagCacheLimit { cache.removeAll(keepingCapacity: true) }
                cache[identity] = etag
            }
            return etag
        }()
        return OriginAsset(data: data, contentType: OriginContentType.forPath(resolved), lastModified: modified, etag: etag)
    }
}
