import Foundation
import PipelineLocking

/// Fetches images before they are shown, at a low priority and a few at a time, so that a view that comes on
/// screen finds its image in the caches or its download already under way (Nuke's `ImagePrefetcher`).
///
/// A prefetch is an ordinary fetch of the request you give: it fills the disk cache and, at the request's
/// target sizing, the rendered cache, so an ``ImageViewFetchHelper`` asking for the same request later shows
/// the image synchronously. Give the requests the views will make (same URL, identifier and target sizing).
///
/// - Priority: prefetches run at ``priority`` (default `.veryLow`), behind every fetch a view makes. When a
///   view asks for an image while its prefetch is downloading, the view's fetch joins that download and raises
///   it to its own priority (a shared download runs at the highest priority of its fetches), so nothing is
///   downloaded twice and nothing visible waits behind a prefetch.
/// - The link: at `.veryLow`, a prefetch's download is background work
///   (``DownloadCoordinator/yieldsBackgroundDownloads``): it downloads only while no other download waits or
///   runs, and stops the moment one comes, to continue where it stopped once the link is free again.
/// - Limit: at most ``maxConcurrentPrefetches`` prefetches run at once; the rest wait, oldest first. Keep the
///   limit below the operation queue's width, or prefetches would hold the slots visible fetches need.
/// - Window: call ``startPrefetching(with:)`` for what is about to appear (the next screen in the scroll's
///   direction) and ``stopPrefetching(with:)`` for what no longer is: a waiting prefetch is dropped, a running
///   one cancelled (a download other fetches share goes on for them).
///
/// Thread-safe. Releasing the prefetcher cancels its prefetches.
public final class ImagePrefetcher: Sendable {
    /// The pipeline prefetches go through.
    public let pipeline: ImagePipeline
    /// The priority of every prefetch.
    public let priority: Operation.QueuePriority
    /// How many prefetches run at once, at most.
    public let maxConcurrentPrefetches: Int

    private let state = Locked(State())

    private struct State {
        /// Requests waiting to start, oldest first, by key.
        var waiting: [(key: PrefetchKey, request: any FetchRequest)] = []
        /// Running prefetches by key, each with the number it was started under: a prefetch stopped and
        /// started again must not be ended by the first one's completion.
        var running: [PrefetchKey: (number: Int, operation: FetchOperation)] = [:]
        var started = 0
        /// Set while a thread starts prefetches: a prefetch that completes synchronously (a rendered-cache hit)
        /// asks for more inside that loop, which looks again anyway.
        var isStarting = false
        var completed = 0

        func contains(_ key: PrefetchKey) -> Bool {
            running[key] != nil || waiting.contains { $0.key == key }
        }
    }

    /// A prefetcher for `pipeline`.
    /// - Parameters:
    ///   - pipeline: the pipeline prefetches go through (held for the prefetcher's life).
    ///   - priority: the priority of every prefetch; default `.veryLow`.
    ///   - maxConcurrentPrefetches: prefetches running at once, at most (at least 1); default 2.
    public init(pipeline: ImagePipeline, priority: Operation.QueuePriority = .veryLow, maxConcurrentPrefetches: Int = 2) {
        self.pipeline = pipeline
        self.priority = priority
        self.maxConcurrentPrefetches = max(1, maxConcurrentPrefetches)
    }

    deinit {
        for (_, operation) in state.withLock({ $0.running.values }) { operation.cancel() }
    }

    /// Queues prefetches of `requests`, in order, behind those already waiting; a request already waiting or
    /// running is left as it is.
    public func startPrefetching(with requests: [any FetchRequest]) {
        state.withLock { state in
            for request in requests {
                let key = PrefetchKey(request)
                if !state.contains(key) { state.waiting.append((key, request)) }
            }
        }
        startWaiting()
    }

    /// Drops the waiting prefetches of `requests` and cancels the running ones.
    public func stopPrefetching(with requests: [any FetchRequest]) {
        let keys = Set(requests.map(PrefetchKey.init))
        let cancelled = state.withLock { state -> [FetchOperation] in
            state.waiting.removeAll { keys.contains($0.key) }
            return keys.compactMap { state.running.removeValue(forKey: $0)?.operation }
        }
        cancelled.forEach { $0.cancel() }
        startWaiting()
    }

    /// Drops every waiting prefetch and cancels the running ones.
    public func stopPrefetching() {
        let cancelled = state.withLock { state -> [FetchOperation] in
            state.waiting.removeAll()
            defer { state.running.removeAll() }
            return state.running.values.map(\.operation)
        }
        cancelled.forEach { $0.cancel() }
    }

    /// Prefetches running now.
    public var runningCount: Int { state.withLock { $0.running.count } }
    /// Prefetches waiting for a slot.
    public var waitingCount: Int { state.withLock { $0.waiting.count } }
    /// Prefetches that have ended with an image so far.
    public var completedCount: Int { state.withLock { $0.completed } }

    /// Whether `request` is waiting or running.
    public func isPrefetching(_ request: any FetchRequest) -> Bool {
        state.withLock { $0.contains(PrefetchKey(request)) }
    }

    /// Starts waiting prefetches while the limit allows. Never holds the lock while starting one: a fetch may
    /// complete inside ``ImagePipeline/fetchImage(with:)``.
    private func startWaiting() {
        let isFirst = state.withLock { state -> Bool in
            defer { state.isStarting = true }
            return !state.isStarting
        }
        guard isFirst else { return }
        while true {
            // The operation is made and counted as running under the lock, so that a stop or a start of the
            // same request on another thread meanwhile sees it.
            let next = state.withLock { state -> FetchOperation? in
                guard state.running.count < maxConcurrentPrefetches, !state.waiting.isEmpty else {
                    state.isStarting = false
                    return nil
                }
                state.started += 1
                let (number, (key, request)) = (state.started, state.waiting.removeFirst())
                let operation = pipeline.operation(with: request) { [weak self] result in
                    self?.prefetchEnded(key, number: number, succeeded: (try? result.get()) != nil)
                }
                operation.priority = priority
                state.running[key] = (number, operation)
                return operation
            }
            guard let next else { return }
            pipeline.fetchImage(with: next)
        }
    }

    // Runs on the delegate queue (the fetch's completion), or inside `fetchImage` for a rendered-cache hit.
    private func prefetchEnded(_ key: PrefetchKey, number: Int, succeeded: Bool) {
        state.withLock { state in
            guard state.running[key]?.number == number else { return }
            state.running[key] = nil
            if succeeded { state.completed += 1 }
        }
        startWaiting()
    }
}
