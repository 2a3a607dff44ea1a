import PipelineLocking

/// The fetch helpers of one pipeline, by the identifier of the image each shows, so that a store wakes only the
/// helpers of its image.
///
/// Each helper used to observe ``ImagePipeline/didStoreCachedImageNotification`` itself: every store then cost
/// the delegate queue a call per helper, on the main queue and for every store, a cost that grows with the
/// number of cells on screen, when only the one or two helpers that show that image have anything to do.
final class StoredImageWatchers: Sendable {
    private struct Watcher {
        weak var helper: ImageViewFetchHelper?
    }

    private let byIdentifier = Locked<[String: [ObjectIdentifier: Watcher]]>([:])

    /// Moves `helper` from the identifier it watched to `identifier` (`nil`: it stops watching).
    func move(_ helper: ImageViewFetchHelper, from previous: String?, to identifier: String?) {
        guard previous != identifier else { return }
        let key = ObjectIdentifier(helper)
        byIdentifier.withLock { watchers in
            if let previous {
                watchers[previous]?[key] = nil
                if watchers[previous]?.isEmpty == true { watchers[previous] = nil }
            }
            if let identifier { watchers[identifier, default: [:]][key] = Watcher(helper: helper) }
        }
    }

    /// The live helpers watching `identifier`.
    func helpers(watching identifier: String) -> [ImageViewFetchHelper] {
        byIdentifier.withLock { watchers in watchers[identifier]?.values.compactMap(\.helper) ?? [] }
    }
}
