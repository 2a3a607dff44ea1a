import Crypto
import Foundation
import ImagePipelineKit
import NIOCore
import PipelineLocking

/// A fleet-shared image cache (``ImagePipelineKit/SharedImageCache``) on Redis: values with a checked header
/// (a `signingSecret` adds an HMAC-SHA256), fill leases with `SET NX PX` and a random token, released by a
/// compare-and-delete script. A value that fails a check is deleted and counted, never served.
///
/// ```swift
/// let client = RedisClient(configuration: try RedisConfiguration(url: "redis://:secret@10.0.0.5:6379"))
/// pipeline.sharedCache = SharedCacheConfiguration(cache: RedisImageCache(client: client, signingSecret: fleetSecret))
/// ```
public final class RedisImageCache: SharedImageCache {
    /// The client the cache talks through.
    public let client: RedisClient
    /// The largest image stored; larger ones stay in the local caches. Default 8 MiB.
    public let maxValueBytes: Int
    private let secret: SymmetricKey?
    private let rejections = Locked(0)

    /// Deletes the lease only when it still holds the caller's token: a lease that expired and was taken by
    /// another process is not freed by the one that lost it.
    static let releaseScript = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end
        """

    /// Deletes the value only when its SHA-1 is still the rejected one's: the delete runs in the background, so
    /// a good value written meanwhile (by the fetch that went on to the origin, or by another process) must
    /// not be the one it removes.
    static let deleteRejectedScript = """
        local value = redis.call('GET', KEYS[1])
        if value and redis.sha1hex(value) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end
        """

    /// A cache on `client`.
    /// - Parameters:
    ///   - client: the Redis client.
    ///   - signingSecret: the fleet's secret: values are signed with it, and values without its signature are
    ///     rejected. `nil` (the default) checks the checksum only.
    ///   - maxValueBytes: the largest image stored (default 8 MiB).
    public init(client: RedisClient, signingSecret: Data? = nil, maxValueBytes: Int = 8 << 20) {
        self.client = client
        self.maxValueBytes = maxValueBytes
        secret = signingSecret.map { SymmetricKey(data: $0) }
    }

    /// Values that failed a check and were deleted since the cache was made.
    public var rejectedValueCount: Int { rejections.withLock { $0 } }

    /// The value under `key`, checked; a value that fails a check is deleted and reported as rejected.
    /// - Parameter key: the value's key.
    /// - Throws: ``RedisClientError`` or ``ImagePipelineKit/SharedCacheCircuitOpenError`` when Redis could not be asked.
    public func value(for key: SharedCacheKey) async throws -> SharedCacheLookup {
        let reply = try await client.send("GET", [.string(key.rawValue)])
        switch reply {
        case .bulkString(nil):
            return .miss
        case .bulkString(let bytes?):
            switch SharedValueFormat.decode(bytes, key: key, secret: secret) {
            case .success(let value):
                return .hit(value)
            case .failure(let rejection):
                rejections.withLock { $0 += 1 }
                // Deleted in the background: the fetch goes on to the origin meanwhile.
                let digest = Self.sha1Hex(bytes)
                Task { try? await self.deleteRejectedValue(for: key, sha1Hex: digest) }
                return .rejected(reason: rejection.rawValue)
            }
        case .error(let message):
            throw RedisClientError.serverError(message)
        default:
            throw RedisClientError.protocolViolation("unexpected reply to GET")
        }
    }

    /// Stores `value` under `key` with its time to live.
    /// - Parameters:
    ///   - value: the image and its metadata.
    ///   - key: the value's key.
    /// - Throws: ``RedisImageCacheError/valueTooLarge(bytes:limit:)`` for an image over ``maxValueBytes``, or a
    ///   client error.
    public func store(_ value: SharedCacheValue, for key: SharedCacheKey) async throws {
        guard value.data.count <= maxValueBytes else {
            throw RedisImageCacheError.valueTooLarge(bytes: value.data.count, limit: maxValueBytes)
        }
        let encoded = try SharedValueFormat.encode(value, key: key, secret: secret)
        let milliseconds = max(1, Int64(value.timeToLive * 1000))
        try expectOK(await client.send("SET", [.string(key.rawValue), .bytes(encoded), .string("PX"), .string("\(milliseconds)")]))
    }

    /// Takes the fill lease of `key` for `ttl` with `SET NX PX` and a random token.
    /// - Parameters:
    ///   - key: the value's key.
    ///   - ttl: how long the lease lasts.
    /// - Returns: the lease, or `nil` when another holder has it.
    /// - Throws: a client error.
    public func acquireLease(for key: SharedCacheKey, ttl: Duration) async throws -> SharedCacheLease? {
        let token = Self.randomToken()
        let reply = try await client.send("SET", [.string(Self.leaseKey(key)), .string(token), .string("NX"), .string("PX"),
                                                  .string("\(max(1, ttl.wholeMilliseconds))")])
        switch reply {
        case .simpleString: return SharedCacheLease(key: key, token: token)
        case .bulkString(nil): return nil
        case .error(let message): throw RedisClientError.serverError(message)
        default: throw RedisClientError.protocolViolation("unexpected reply to SET NX")
        }
    }

    /// Gives `lease` back when it still holds the caller's token.
    /// - Parameter lease: the lease.
    /// - Throws: a client error.
    public func releaseLease(_ lease: SharedCacheLease) async throws {
        let reply = try await client.send("EVAL", [.string(Self.releaseScript), .string("1"), .string(Self.leaseKey(lease.key)),
                                                   .string(lease.token)])
        if case .error(let message) = reply { throw RedisClientError.serverError(message) }
    }

    /// Deletes the value under `key`.
    /// - Parameter key: the value's key.
    /// - Throws: a client error.
    public func removeValue(for key: SharedCacheKey) async throws {
        let reply = try await client.send("DEL", [.string(key.rawValue)])
        if case .error(let message) = reply { throw RedisClientError.serverError(message) }
    }

    /// Deletes the value under `key` when it is still the one whose SHA-1 is `sha1Hex`.
    /// - Returns: whether a value was deleted.
    @discardableResult
    func deleteRejectedValue(for key: SharedCacheKey, sha1Hex: String) async throws -> Bool {
        let reply = try await client.send("EVAL", [.string(Self.deleteRejectedScript), .string("1"), .string(key.rawValue),
                                                   .string(sha1Hex)])
        switch reply {
        case .integer(let deleted): return deleted == 1
        case .error(let message): throw RedisClientError.serverError(message)
        default: throw RedisClientError.protocolViolation("unexpected reply to EVAL")
        }
    }

    /// The lowercase hexadecimal SHA-1 of `bytes`, as Redis's `redis.sha1hex` spells it.
    static func sha1Hex(_ bytes: ByteBuffer) -> String {
        bytes.withUnsafeReadableBytes { Insecure.SHA1.hash(data: $0) }.map { String(format: "%02x", $0) }.joined()
    }

    /// The key of `key`'s fill lease.
    static func leaseKey(_ key: SharedCacheKey) -> String { key.rawValue + ":lease" }

    private static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(generator.next() as UInt64, radix: 16) }.joined(separator: "-")
    }

    private func expectOK(_ reply: RESPValue) throws {
        switch reply {
        case .simpleString: return
        case .error(let message): throw RedisClientError.serverError(message)
        default: throw RedisClientError.protocolViolation("unexpected reply")
        }
    }
}

/// Why the Redis cache refused a value.
public enum RedisImageCacheError: Error, Sendable, Equatable {
    /// The image is larger than ``RedisImageCache/maxValueBytes``; it stays in the local caches.
    case valueTooLarge(bytes: Int, limit: Int)
}
