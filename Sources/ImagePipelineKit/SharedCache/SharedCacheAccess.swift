import Foundation
import PipelineLocking

/// A pipeline's way into its shared cache: every call bounded by the configuration's timeout, every error
/// turned into a miss and a named problem (once per outage, not once per call), every outcome counted. The
/// pipeline's caches (`PipelineCaches`) use it for fetches, stores and clears; it never throws and never holds
/// a fetch up longer than the timeout.
final class SharedCacheAccess: Sendable {
    let configuration: SharedCacheConfiguration
    private let pipeline: String
    /// The pipeline's name in the keys.
    private let keyName: String
    private let global: GlobalConfiguration
    /// Whether the last call failed: an outage is reported when it begins, not at every failed call.
    private let isFailing = Locked(false)
    /// Whether the cache's circuit breaker was reported open since the last call that succeeded.
    private let circuitReported = Locked(false)
    /// Keys whose fill lease a fetch of this process holds: another fetch of the image here joins that download
    /// (the coordinator shares it) rather than waiting for the shared cache.
    private let leasesHeldHere = Locked<Set<SharedCacheKey>>([])

    init(_ configuration: SharedCacheConfiguration, pipeline: String, global: GlobalConfiguration) {
        self.configuration = configuration
        self.pipeline = pipeline
        keyName = configuration.pipelineName ?? pipeline
        self.global = global
    }

    /// The key of `identifier` in this pipeline: namespaced, versioned, with the identifier hashed (``SharedCacheKey``).
    /// Every pipeline of the same name in the fleet finds the image there.
    func key(for identifier: String) -> SharedCacheKey {
        SharedCacheKey(namespace: configuration.namespace, pipeline: keyName, identifier: identifier)
    }

    /// The value of `key`: a checked hit, else a miss (nothing there, a rejected value, or a failed call).
    func value(for key: SharedCacheKey, identifier: String) async -> SharedCacheValue? {
        let cache = configuration.cache
        guard let lookup = await call("value", { try await cache.value(for: key) }) else { return nil }
        switch lookup {
        case .hit(let value):
            return value
        case .miss:
            return nil
        case .rejected(let reason):
            global.recordSharedCache(.rejected, pipeline: pipeline)
            global.report(.sharedCacheValueRejected(identifier: identifier, reason: reason))
            return nil
        }
    }

    /// What asking for the fill lease came to.
    enum LeaseOutcome: Sendable {
        /// This fetch holds the lease: it downloads and writes the image through.
        case acquired(SharedCacheLease)
        /// Another holder downloads the image.
        case heldElsewhere
        /// The cache did not answer: the fetch goes on without it.
        case unavailable
    }

    /// Asks for the fill lease of `key`.
    func acquireLease(for key: SharedCacheKey) async -> LeaseOutcome {
        let cache = configuration.cache
        let ttl = configuration.leaseTimeToLive
        guard let answer = await call("acquireLease", { try await cache.acquireLease(for: key, ttl: ttl) }) else {
            return .unavailable
        }
        guard let lease = answer else { return .heldElsewhere }
        leasesHeldHere.withLock { _ = $0.insert(key) }
        return .acquired(lease)
    }

    /// Whether a fetch of this process holds the fill lease of `key`.
    func holdsLeaseHere(for key: SharedCacheKey) -> Bool {
        leasesHeldHere.withLock { $0.contains(key) }
    }

    /// Gives `lease` back, in the background.
    func release(_ lease: SharedCacheLease) {
        let cache = configuration.cache
        Task {
            _ = await call("releaseLease", { try await cache.releaseLease(lease) })
            leasesHeldHere.withLock { _ = $0.remove(lease.key) }
        }
    }

    /// Writes `value` through under `key`, unless it is larger than the configuration allows; gives `lease`
    /// back afterwards. Runs in the background: nothing waits for it.
    func writeThrough(_ value: SharedCacheValue, key: SharedCacheKey, releasing lease: SharedCacheLease?) {
        let cache = configuration.cache
        let fits = value.data.count <= configuration.maxValueBytes
        Task {
            if fits, await call("store", { try await cache.store(value, for: key) }) != nil {
                global.recordSharedCache(.stored, pipeline: pipeline)
            }
            if let lease {
                _ = await call("releaseLease", { try await cache.releaseLease(lease) })
                leasesHeldHere.withLock { _ = $0.remove(lease.key) }
            }
        }
    }

    /// Deletes `identifier`'s value, in the background.
    func remove(identifier: String) {
        let cache = configuration.cache
        let key = key(for: identifier)
        Task { _ = await call("removeValue", { try await cache.removeValue(for: key) }) }
    }

    /// Counts an outcome of a fetch's shared-cache step.
    func record(_ event: GlobalConfiguration.SharedCacheEvent) {
        global.recordSharedCache(event, pipeline: pipeline)
    }

    /// Runs `operation` bounded by the timeout; `nil` when it failed or took too long (then reported).
    private func call<T: Sendable>(_ name: String, _ operation: @escaping @Sendable () async throws -> T) async -> T? {
        do {
            let result = try await Self.bounded(by: configuration.operationTimeout, operation)
            isFailing.withLock { $0 = false }
            circuitReported.withLock { $0 = false }
            return result
        } catch {
            global.recordSharedCache(.error, pipeline: pipeline)
            if let open = error as? SharedCacheCircuitOpenError {
                let opens = circuitReported.withLock { reported in
                    defer { reported = true }
                    return !reported
                }
                if opens { global.report(.sharedCacheCircuitOpen(retryAfter: open.retryAfter)) }
            }
            let beginsOutage = isFailing.withLock { failing in
                defer { failing = true }
                return !failing
            }
            if beginsOutage { global.report(.sharedCacheUnavailable(reason: "\(name): \(error)")) }
            return nil
        }
    }

    /// `operation`'s result, or ``SharedCacheTimeoutError`` once `timeout` passed; the operation is then
    /// cancelled and left to end on its own (a cache that ignores cancellation never holds the caller up).
    static func bounded<T: Sendable>(by timeout: Duration, _ operation: @escaping @Sendable () async throws -> T)
        async throws -> T {
        let pending = Locked<CheckedContinuation<T, any Error>?>(nil)
        let take: @Sendable () -> CheckedContinuation<T, any Error>? = {
            pending.withLock { continuation in
                defer { continuation = nil }
                return continuation
            }
        }
        return try await withCheckedThrowingContinuation { continuation in
            pending.withLock { $0 = continuation }
            let work = Task {
                do {
                    let value = try await operation()
                    take()?.resume(returning: value)
                } catch {
                    take()?.resume(throwing: error)
                }
            }
            Task {
                try? await Task.sleep(for: timeout)
                guard let continuation = take() else { return }
                work.cancel()
                continuation.resume(throwing: SharedCacheTimeoutError(timeout: timeout))
            }
        }
    }
}

/// A shared-cache call that took longer than ``SharedCacheConfiguration/operationTimeout``.
public struct SharedCacheTimeoutError: Error, Sendable, CustomStringConvertible {
    /// The timeout that passed.
    public let timeout: Duration

    /// Says which timeout passed.
    public var description: String { "timed out after \(timeout)" }
}

/// Thrown by a shared cache whose circuit breaker is open: it skips the engine after repeated failures and
/// tries again after ``retryAfter``. The pipeline reports ``ImagePipelineProblem/sharedCacheCircuitOpen(retryAfter:)``
/// once per opening.
public struct SharedCacheCircuitOpenError: Error, Sendable, CustomStringConvertible {
    /// How long the breaker stays open from the moment it opened.
    public let retryAfter: Duration

    /// An error for a breaker open for `retryAfter`.
    /// - Parameter retryAfter: how long the breaker stays open.
    public init(retryAfter: Duration) {
        self.retryAfter = retryAfter
    }

    /// Says the breaker is open.
    public var description: String { "circuit breaker open (retries after \(retryAfter))" }
}
