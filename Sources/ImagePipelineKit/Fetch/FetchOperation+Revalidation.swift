import Foundation

// HTTP freshness in a fetch (``CacheFreshnessPolicy/http``): a stale disk image with a validator is revalidated
// with a conditional request instead of downloaded again, and a `304` delivers the bytes already on disk.
// Every method runs on the operation's queue.
extension FetchOperation {
    /// Under the HTTP policy, what the disk step comes to for an image the origin's headers call stale:
    /// `.revalidate` when it has a validator and the fetch may use the network, `.miss` otherwise (it is
    /// downloaded again, and the download replaces it). `nil` when the disk step goes on as usual: there is no
    /// image of this URL, it is fresh, or it carries no response metadata (stored by hand, or cached before the
    /// metadata was kept), which the time to live alone governs.
    func _queue_staleDiskImageOutcome() -> SourceOutcome? {
        let now = Date()
        guard let (url, metadata) = pipeline.caches.diskImageMetadata(identifier: plan.identifier, now: now),
              url == plan.url, let metadata, !metadata.isFresh(at: now, fallbackLifetime: plan.timeToLive)
        else { return nil }
        guard metadata.hasValidator, plan.sources.contains(.network),
              let cached = pipeline.caches.entry(in: .disk, identifier: plan.identifier)?.complete, cached.url == plan.url
        else { return .miss }
        return .revalidate(cached)
    }

    /// Whether `image` may be used without asking the origin under the pipeline's policy (always under TIP's
    /// time to live, whose expiry the caches already applied).
    func _queue_isFreshForPolicy(_ image: CachedImageData) -> Bool {
        guard pipeline.freshnessPolicy == .http, let metadata = image.httpMetadata else { return true }
        return metadata.isFresh(at: Date(), fallbackLifetime: plan.timeToLive)
    }

    /// The response of a revalidation was not a `304`: the fetch goes on as a plain download, which replaces
    /// the cached image. Renditions of the old bytes at other sizes go now, before the new ones are kept.
    func _queue_revalidationAnsweredWithImage() {
        guard revalidatingImage != nil else { return }
        revalidatingImage = nil
        pipeline.caches.forgetRendered(identifier: plan.identifier)
        metricsRecorder.rekeyOpenSource(as: .network)
    }

    /// The origin answered the revalidation with `304 Not Modified`: the entry's metadata is refreshed from the
    /// `304`, and the bytes on disk are delivered as ``ImageLoadSource/diskRevalidated``, the download they
    /// spared counted as saved.
    func _queue_revalidated(_ response: DownloadResponse) {
        guard let cached = revalidatingImage else {
            return _queue_fail(FetchError(.couldNotLoadImage))
        }
        revalidatingImage = nil
        let now = Date()
        var image = cached
        image.httpMetadata = (cached.httpMetadata ?? HTTPCacheMetadata(receivedAt: now)).refreshed(by: response.headers, at: now)
        image.lastAccess = now
        if let metadata = image.httpMetadata {
            pipeline.caches.refreshOnDisk(metadata, identifier: plan.identifier, url: plan.url, now: now)
        }
        metricsRecorder.noteRevalidated(bytesSaved: cached.data.count)
        _queue_deliverCached(image, from: .disk, source: .diskRevalidated) { [self] in
            // The bytes on disk did not decode (and are gone): download the image after all.
            guard !_queue_abortIfNeeded() else { return }
            remainingSources = [.network]
            _queue_loadFromNextSource()
        }
    }
}
