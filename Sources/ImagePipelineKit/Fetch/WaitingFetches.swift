import Foundation
import PipelineLocking

/// Fetches waiting in the operation queue, by the rendition they ask for, so that the fetch that makes that
/// rendition can answer them at once: a hundred fetches of one image are then all called back within a
/// millisecond of the first.
///
/// Without it, each waiting fetch finds the rendition in the rendered cache only when the operation queue gets
/// to it: a turn of the queue per fetch, a few hundred microseconds apart on a busy machine. A pipeline owns
/// one; only fetches that may read the rendered cache are listed.
final class WaitingFetches: Sendable {
    private let waiting = Locked<[RenderedLookup: [ObjectIdentifier: FetchOperation]]>([:])

    /// Lists `operation` until it starts (``remove(_:)``) or is answered.
    func add(_ operation: FetchOperation) {
        guard let key = operation.plan.keys.renderedLookup else { return }
        waiting.withLock { $0[key, default: [:]][ObjectIdentifier(operation)] = operation }
    }

    /// Takes `operation` off the list: it started.
    func remove(_ operation: FetchOperation) {
        guard let key = operation.plan.keys.renderedLookup else { return }
        waiting.withLock { waiting in
            waiting[key]?[ObjectIdentifier(operation)] = nil
            if waiting[key]?.isEmpty == true { waiting[key] = nil }
        }
    }

    /// Takes every fetch waiting for the rendition `lookup` names off the list.
    func take(waitingFor lookup: RenderedLookup?) -> [FetchOperation] {
        guard let key = lookup,
              let operations = waiting.withLock({ $0.removeValue(forKey: key) }) else { return [] }
        return Array(operations.values)
    }
}
