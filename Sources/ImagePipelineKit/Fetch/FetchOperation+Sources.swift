import Foundation
import Synchronization
import PipelineLocking
import Tracing

/// The places a fetch looks for its image, in the order it tries them. (The rendered cache is read before
/// the fetch is queued, by ``ImagePipeline/fetchImage(with:)``, and again as the memory step begins.)
enum FetchSource: CaseIterable, Sendable {
    /// The rendered cache, then the encoded bytes in memory.
    case memoryCache
    /// This pipeline's disk cache.
    case diskCache
    /// Other live pipelines' disk caches: an image of the same identifier and URL is copied into this one.
    case otherPipelines
    /// The fleet-shared cache (``ImagePipeline/sharedCache``), where the fetch may also take the fill lease
    /// or wait for another process's download.
    case sharedCache
    /// The read-only caches of ``ImagePipeline/additionalCaches``.
    case additionalCaches
    /// A download, or the rest of a partial image from the caches.
    case network
}

/// What trying one source came to.
enum SourceOutcome {
    /// The fetch ended here (it succeeded or failed).
    case finished
    /// The source answers later (a decode it joined, the delegate's answer to a preview, an additional cache)
    /// and then hands its outcome to `_queue_continue(with:)`.
    case waiting
    /// A partial image of this URL to resume from the network; the sources left before it are skipped.
    case resume(PartialImageData)
    /// A stale disk image of this URL to revalidate with a conditional request; the sources left before the
    /// network are skipped.
    case revalidate(CachedImageData)
    /// Nothing here: the next source.
    case miss
}

extension PipelineCaches.Tier {
    /// The source a fetch reports while it reads this tier.
    var loadSource: ImageLoadSource { self == .memory ? .memoryCache : .diskCache }
    /// The request's loading source that allows reading this tier.
    var loadingSource: LoadingSources { self == .memory ? .memoryCache : .diskCache }
    /// The fetch's state while it reads this tier.
    var fetchState: FetchOperation.State { self == .memory ? .loadingFromMemory : .loadingFromDisk }
}

// The source-by-source walk of a fetch: one dispatcher picks the next source, each source step says what it
// came to. Every method runs on the operation's queue; decoding happens here, never on the delegate queue.
extension FetchOperation {
    func _queue_start() {
        // Before the check for a cancel: see `cancel()`.
        shared.withLock { $0.stepsHaveBegun = true }
        guard !_queue_abortIfNeeded() else { return }
        // Without a tracer, a fetch builds no spans: naming and labelling them is work the no-op tracer throws away.
        let tracer = pipeline.configuration.tracer
        if !(tracer is NoOpTracer) {
            metricsRecorder.trace = FetchTrace(tracer: tracer, parent: traceParent, pipeline: pipeline.identifier,
                                               identifier: plan.identifier)
        }
        guard !plan.identifier.isEmpty else { return _queue_fail(FetchError(.invalidRequest)) }
        if let dimensions = plan.invalidTargetDimensions {
            pipeline.configuration.report(.invalidTargetDimensions(identifier: plan.identifier, dimensions: dimensions))
        }
        _queue_setState(.starting)
        _queue_tellDelegateStarted()
        _queue_loadFromNextSource()
    }

    /// Tries the next source the fetch has not tried yet (TIP's "load from next source").
    func _queue_loadFromNextSource() {
        guard !_queue_abortIfNeeded(), let source = remainingSources.popFirst() else { return }
        let outcome: SourceOutcome = switch source {
        case .memoryCache: _queue_loadFromCache(.memory)
        case .diskCache: _queue_loadFromCache(.disk)
        case .otherPipelines: _queue_loadFromOtherPipelines()
        case .sharedCache: _queue_loadFromSharedCache()
        case .additionalCaches: _queue_loadFromAdditionalCaches()
        case .network: _queue_loadFromNetwork()
        }
        _queue_continue(with: outcome)
    }

    /// Goes on after a source step, at once or when a waiting step answers.
    func _queue_continue(with outcome: SourceOutcome) {
        switch outcome {
        case .finished, .waiting:
            return
        case .miss:
            _queue_loadFromNextSource()
        case .resume(let partial):
            // TIP's jump: a partial image goes straight to the network, past the caches not tried yet.
            resumablePartial = partial
            remainingSources = [.network]
            _queue_loadFromNextSource()
        case .revalidate(let cached):
            revalidatingImage = cached
            remainingSources = [.network]
            _queue_loadFromNextSource()
        }
    }

    /// Marks the start of trying `source`: the state, the metrics and the delegate's `willAttemptToLoadFrom`.
    func _queue_begin(_ source: ImageLoadSource, state: State) {
        _queue_setState(state)
        metricsRecorder.begin(source)
        guard delegateCallbacks.contains(.sourceAttempts) else { return }
        _queue_tellDelegate { $0.fetchOperation(self, willAttemptToLoadFrom: source) }
    }

    // MARK: - Memory and disk

    /// The memory and the disk steps: the image's rendition from the tables, else its cached bytes decoded at
    /// the target, else a preview from another URL, else its partial to resume.
    private func _queue_loadFromCache(_ tier: PipelineCaches.Tier) -> SourceOutcome {
        guard plan.sources.contains(tier.loadingSource), pipeline.caches.has(tier) else { return .miss }
        _queue_begin(tier.loadSource, state: tier.fetchState)
        if tier == .disk, pipeline.freshnessPolicy == .http, let stale = _queue_staleDiskImageOutcome() { return stale }
        // A rendition made while this fetch waited in the operation queue (another fetch of the image finished)
        // needs no decode. TIP reads the rendered cache only before queueing; reading it again here is what
        // lets a hundred queued fetches of one image cost one decode.
        if tier == .memory, let result = pipeline.cleanRendition(for: plan) {
            _queue_succeed(result)
            return .finished
        }
        // With rendition tables, what the tier knows of the image names its rendition, which then needs no decode.
        // Memory holds the bytes anyway, so its entry is read once; on disk the index alone is asked, and the
        // file is read only when the tables miss.
        let caches = pipeline.caches
        let memoryEntry = tier == .memory
            ? pipeline.configuration.measuring(.cacheRead) { caches.entry(in: .memory, identifier: plan.identifier) } : nil
        if caches.keepsRenditionTables, plan.keys.keepsRenditions,
           let info = tier == .memory ? memoryEntry?.complete.map(CachedImageInfo.init)
                                      : pipeline.caches.diskImageInfo(identifier: plan.identifier),
           info.url == plan.url, _queue_showRendition(of: info, source: tier.loadSource) == .final {
            return .finished
        }
        let entry = tier == .memory
            ? memoryEntry : pipeline.configuration.timingDiskCache(.read) {
                pipeline.configuration.measuring(.cacheRead) { caches.entry(in: .disk, identifier: plan.identifier) }
            }
        let afterImage: @Sendable () -> Void = { [self] in _queue_continue(with: _queue_partialOutcome(entry)) }
        if let complete = entry?.complete {
            if complete.url == plan.url {
                _queue_deliverCached(complete, from: tier, orElse: afterImage)
                return .waiting
            }
            // One preview per fetch: a disk image of another URL only when the memory cache offered none.
            if previewResult == nil {
                _queue_offerPreview(complete, source: tier.loadSource, then: afterImage)
                return .waiting
            }
        }
        return _queue_partialOutcome(entry)
    }

    /// The entry's partial image of this URL to resume, when the fetch may resume.
    private func _queue_partialOutcome(_ entry: CacheEntry?) -> SourceOutcome {
        guard let partial = entry?.partial, partial.url == plan.url, plan.mayResume else { return .miss }
        return .resume(partial)
    }

    // MARK: - Other pipelines and additional caches

    /// Another live pipeline's disk entry with the same identifier *and* URL is copied into this pipeline's disk
    /// cache and delivered from there.
    private func _queue_loadFromOtherPipelines() -> SourceOutcome {
        // Their images are copied into this pipeline's disk, so the disk source and a disk of its own are needed.
        guard plan.sources.contains(.diskCache), pipeline.caches.has(.disk) else { return .miss }
        return _queue_loadFromOtherPipelines(PipelineRegistry.shared.livePipelines.filter { $0 !== pipeline }[...])
    }

    private func _queue_loadFromOtherPipelines(_ others: ArraySlice<ImagePipeline>) -> SourceOutcome {
        var others = others
        while let other = others.popFirst() {
            guard let found = other.caches.peekOnDisk(identifier: plan.identifier), found.url == plan.url,
                  _queue_isFreshForPolicy(found) else { continue }
            var copy = found
            copy.timeToLive = plan.timeToLive
            copy.updatesExpiryOnAccess = plan.updatesExpiryOnAccess
            copy.lastAccess = Date()
            guard let stored = pipeline.caches.copyFromOtherPipeline(copy, identifier: plan.identifier) else { continue }
            let rest = others
            _queue_deliverCached(stored, from: .disk, percolates: false) { [self] in
                _queue_continue(with: _queue_loadFromOtherPipelines(rest))
            }
            return .waiting
        }
        return .miss
    }

    /// Additional caches are read-only sources: what they give goes to the rendered cache only.
    private func _queue_loadFromAdditionalCaches() -> SourceOutcome {
        guard plan.sources.contains(.additionalCache) else { return .miss }
        _queue_begin(.additionalCache, state: .loadingFromAdditionalCache)
        let caches = pipeline.additionalCaches
        guard !caches.isEmpty else { return .miss }
        let url = plan.url
        Task {
            var hit: ImageContainer?
            for cache in caches {
                if let image = await cache.image(for: url) {
                    hit = image
                    break
                }
            }
            let found = hit
            queue.async { [self] in
                guard !_queue_abortIfNeeded() else { return }
                guard let found else { return _queue_continue(with: .miss) }
                let (image, transformed) = _queue_transform((try? found.scaled(for: plan.target)) ?? found, progress: 1)
                _queue_keepRendered(image, from: url, sourceDimensions: found.dimensions, isPlaceholder: false,
                                    transformed: transformed)
                _queue_succeed(FetchResult(image: image, source: .additionalCache, url: url, originalDimensions: found.dimensions,
                                           isPlaceholder: false, identifier: plan.identifier, imageWasTransformed: transformed))
            }
        }
        return .waiting
    }

    // MARK: - Previews

    /// Offers `cached` (same identifier, another URL) as a preview at the target, then, when the delegate
    /// answers "continue" (or there is none), goes on with `next`. "Stop" ends the fetch with
    /// ``FetchErrorCode/cancelledAfterLoadingPreview`` and keeps the preview in the rendered cache.
    private func _queue_offerPreview(_ cached: CachedImageData, source: ImageLoadSource,
                                     then next: @escaping @Sendable () -> Void) {
        let decoded: DecodedImage
        do {
            decoded = try _queue_decode(cached.data)
        } catch is DecodeMemoryBudget.NoRoom {
            // A preview is worth no wait: the fetch goes on without one while the decodes in flight hold the memory.
            return next()
        } catch {
            pipeline.configuration.report(.cachedImageCouldNotBeDecoded(identifier: plan.identifier, source: source))
            return next()
        }
        let (previewImage, transformed) = _queue_transform(decoded.container, progress: -1)
        let preview = FetchResult(image: previewImage, source: source, url: cached.url,
                                  originalDimensions: decoded.properties.dimensions, isPlaceholder: cached.isPlaceholder,
                                  identifier: plan.identifier, imageWasTransformed: transformed)
        shared.withLock { $0.previewResult = preview }
        metricsRecorder.hitPreview()
        // A delegate that answers twice is heard once.
        let answered = Locked(false)
        _queue_onDelegateQueue { [self] in
            guard let delegate else { return queue.async(execute: next) }
            delegate.fetchOperation(self, didLoadPreviewImage: preview) { [self] decision in
                let isFirstAnswer = answered.withLock { wasAnswered in
                    defer { wasAnswered = true }
                    return !wasAnswered
                }
                guard isFirstAnswer else { return }
                queue.async { [self] in
                    guard !_queue_abortIfNeeded() else { return }
                    guard decision == .stopLoading else { return next() }
                    _queue_keepRendered(previewImage, from: cached.url, sourceDimensions: decoded.properties.dimensions,
                                        isPlaceholder: cached.isPlaceholder, transformed: transformed)
                    _queue_fail(FetchError(.cancelledAfterLoadingPreview))
                }
            }
        }
    }
}
