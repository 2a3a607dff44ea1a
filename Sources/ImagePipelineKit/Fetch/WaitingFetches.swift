import Foundation
import PipelineLocking

/// Fetches waiting in the operation queue, by the rendition they ask for, so that the fetch that makes that
/// rendition can answer them at once (performance-anchors B13: a hundred fetches of one image, all called back
/// within a millisecond of the first).
///
/// Without it, each waiting fetch finds the rendition in the rendered cache only when the operation queue gets
/// to it: a turn of the queue per fetch, a few hundred microseconds apart on a busy machine. A pipeline owns
/// one; only fetches that may read the rendered cache are listed.
final class WaitingFetches: Sendable {
    /// What a rendered-cache lookup matches on.
    struct Key: Hashable, Sendable {
        var identifier: String
        var target: TargetSizing
        var transformerIdentifier: String?
    }

    private let waiting = Locked<[Key: [ObjectIdentifier: FetchOperation]]>([:])

    static func key(for request: any FetchRequest) -> Key? {
        guard request.loadingSources.contains(.memoryCache), let target = request.targetSizing.dimensions, !target.isEmpty,
              request.targetSizing.contentMode != .center,
              request.transformer == nil || request.transformer?.identifier != nil else { return nil }
        return Key(identifier: request.resolvedIdentifier, target: request.targetSizing,
                   transformerIdentifier: request.transformer?.identifier)
    }

    /// Lists `operation` until it starts (``remove(_:)``) or is answered.
    func add(_ operation: FetchOperation) {
        guard let key = Self.key(for: operation.request) else { return }
        waiting.withLock { $0[key, default: [:]][ObjectIdentifier(operation)] = operation }
    }

    /// Takes `operation` off the list: it started.
    func remove(_ operation: FetchOperation) {
        guard let key = Self.key(for: operation.request) else { return }
        waiting.withLock { waiting in
            waiting[key]?[ObjectIdentifier(operation)] = nil
            if waiting[key]?.isEmpty == true { waiting[key] = nil }
        }
    }

    /// Takes every fetch waiting for `request`'s rendition off the list.
    func take(waitingFor request: any FetchRequest) -> [FetchOperation] {
        guard let key = Self.key(for: request),
              let operations = waiting.withLock({ $0.removeValue(forKey: key) }) else { return [] }
        return Array(operations.values)
    }
}
