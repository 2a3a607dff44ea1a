import Foundation

/// What looking an image up in the fleet's shared cache came to (``SharedCacheAccess/lookUp(_:url:mayDownload:isCancelled:)``).
enum SharedCacheFill: Sendable {
    /// The image, after waiting `waited` seconds for another process's download (`nil`: no wait).
    case hit(SharedCacheValue, waited: TimeInterval?)
    /// Not there: the caller goes on holding `lease` (it downloads the image and writes it through), or none.
    /// `gaveUpWaiting` when it waited for another process's download for as long as it may.
    case miss(lease: SharedCacheLease?, waited: TimeInterval?, gaveUpWaiting: Bool)
}

// How a process fills the shared cache without the fleet downloading an image once per process: the first to
// miss takes the image's fill lease and downloads it; the others wait for its value.
extension SharedCacheAccess {
    /// Asks for `identifier`'s value (a value of another URL is a miss); on a miss takes the fill lease, or waits
    /// for its holder's value (asking again every poll interval, and taking the lease itself when it comes free)
    /// for at most twice the lease's time to live. A caller that may not download only reads; one whose process
    /// holds the lease already joins that download instead (the download coordinator shares it). Counts the
    /// outcome (hit or miss, the wait, a wait given up).
    func lookUp(_ identifier: String, url: URL, mayDownload: Bool, isCancelled: @escaping @Sendable () -> Bool) async
        -> SharedCacheFill {
        let lookup = await lookUpWithoutCounting(identifier, url: url, mayDownload: mayDownload, isCancelled: isCancelled)
        switch lookup {
        case .hit(_, let waited):
            if waited != nil { record(.leaseWait) }
            record(.hit)
        case .miss(_, let waited, let gaveUpWaiting):
            if waited != nil { record(.leaseWait) }
            if gaveUpWaiting { record(.leaseFallback) }
            record(.miss)
        }
        return lookup
    }

    private func lookUpWithoutCounting(_ identifier: String, url: URL, mayDownload: Bool,
                                       isCancelled: @escaping @Sendable () -> Bool) async -> SharedCacheFill {
        let key = key(for: identifier)
        if let value = await value(for: key, identifier: identifier), value.url == url {
            return .hit(value, waited: nil)
        }
        guard mayDownload, !holdsLeaseHere(for: key) else { return .miss(lease: nil, waited: nil, gaveUpWaiting: false) }
        let started = ContinuousClock.now
        // Two lease lifetimes: when the holder dies, its lease expires and one waiter takes it over; the others
        // then wait for that one rather than all going to the origin at the first lease's expiry.
        let deadline = started + configuration.leaseTimeToLive * 2
        var waited: TimeInterval? { (ContinuousClock.now - started).seconds }
        var isFirstTry = true
        while ContinuousClock.now < deadline, !isCancelled() {
            if !isFirstTry {
                try? await Task.sleep(for: configuration.pollInterval)
                if let value = await value(for: key, identifier: identifier), value.url == url {
                    return .hit(value, waited: waited)
                }
            }
            switch await acquireLease(for: key) {
            case .acquired(let lease):
                // The holder before may have written the value and given the lease back between the last look
                // and this one: a second look costs one round trip, a second download costs the origin.
                if let value = await value(for: key, identifier: identifier), value.url == url {
                    release(lease)
                    return .hit(value, waited: isFirstTry ? nil : waited)
                }
                return .miss(lease: lease, waited: isFirstTry ? nil : waited, gaveUpWaiting: false)
            case .unavailable: return .miss(lease: nil, waited: isFirstTry ? nil : waited, gaveUpWaiting: false)
            case .heldElsewhere: isFirstTry = false
            }
        }
        return .miss(lease: nil, waited: waited, gaveUpWaiting: !isCancelled())
    }
}
