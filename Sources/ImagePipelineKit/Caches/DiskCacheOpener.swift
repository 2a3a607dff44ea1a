import Foundation
import PipelineLocking

/// Opens a pipeline's disk cache, and opens it again later when it could not: a full disk, an index another
/// program holds or a directory that was not writable can all clear up, and a pipeline that lives for hours
/// should get its disk cache back then rather than run without one silently. Every failed attempt is reported
/// (``ImagePipelineProblem/diskCacheUnavailable(pipeline:error:)``); attempts come at most once per
/// ``retryInterval``, on the thread that next asks for the cache.
final class DiskCacheOpener: Sendable {
    /// How long after a failed attempt the next one may come.
    static let retryInterval = Duration.seconds(30)

    private enum State {
        case open(DiskCache)
        case unavailable(DiskCacheError, nextAttempt: ContinuousClock.Instant)
    }

    private let open: @Sendable () throws -> DiskCache
    private let report: @Sendable (DiskCacheError) -> Void
    private let state: Locked<State>

    /// Tries `open` at once; `report` hears of every failure.
    init(open: @escaping @Sendable () throws -> DiskCache, report: @escaping @Sendable (DiskCacheError) -> Void) {
        self.open = open
        self.report = report
        let now = ContinuousClock.now
        state = Locked(Self.attempt(open, report: report, at: now))
    }

    /// The cache, or `nil` while it cannot be opened.
    var cache: DiskCache? { cache(at: .now) }

    /// The cache, or `nil` while it cannot be opened; tries again once `now` is past the next attempt.
    func cache(at now: ContinuousClock.Instant) -> DiskCache? {
        state.withLock { state in
            switch state {
            case .open(let cache):
                return cache
            case .unavailable(_, let nextAttempt):
                guard now >= nextAttempt else { return nil }
                state = Self.attempt(open, report: report, at: now)
                if case .open(let cache) = state { return cache }
                return nil
            }
        }
    }

    /// Why the cache is not open, or `nil` when it is.
    var unavailability: DiskCacheError? {
        state.withLock { state in
            if case .unavailable(let error, _) = state { return error }
            return nil
        }
    }

    private static func attempt(_ open: () throws -> DiskCache, report: (DiskCacheError) -> Void,
                                at now: ContinuousClock.Instant) -> State {
        do {
            return .open(try open())
        } catch {
            let reason = error as? DiskCacheError ?? .index(String(describing: error))
            report(reason)
            return .unavailable(reason, nextAttempt: now + retryInterval)
        }
    }
}
