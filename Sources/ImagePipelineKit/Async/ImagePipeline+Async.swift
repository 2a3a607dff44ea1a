import Foundation
import Synchronization
import PipelineLocking

/// One thing that happened to a fetch, as ``ImagePipeline/events(for:context:previewDecision:loadsProgressively:)`` reports it: the delegate's
/// callbacks as values, in the order the delegate would hear them.
public enum FetchEvent: Sendable {
    /// The fetch started (``FetchDelegate/fetchOperationDidStart(_:)``).
    case started
    /// The fetch is about to try `source` (memory, disk, additional cache or network).
    case willAttemptToLoad(from: ImageLoadSource)
    /// Download progress, 0 ... 1.
    case progress(Double)
    /// A complete cached image of the same identifier from another URL, offered at most once per fetch; the
    /// fetch then goes on or stops as
    /// `events(for:previewDecision:loadsProgressively:)` was told.
    case preview(FetchResult)
    /// A scan of a progressive image while it downloads.
    case progressiveImage(FetchResult, progress: Double)
    /// The first frame of an animated image while the rest downloads.
    case firstAnimatedFrame(FetchResult, progress: Double)
    /// The final image; the sequence ends after it.
    case finished(FetchResult)
}

/// The events of one fetch, ending after ``FetchEvent/finished(_:)`` or by throwing the ``FetchError``.
///
/// Iterate it once. The sequence ends when the operation has finished, so its results are in the caches by
/// then. Breaking out of the loop, or cancelling the task that iterates, cancels the fetch.
public struct FetchEvents: AsyncSequence, Sendable {
    public typealias Element = FetchEvent

    /// The fetch behind the events: change its ``FetchOperation/priority`` or read its state while iterating.
    public let operation: FetchOperation
    private let stream: AsyncThrowingStream<FetchEvent, any Error>

    init(operation: FetchOperation, stream: AsyncThrowingStream<FetchEvent, any Error>) {
        self.operation = operation
        self.stream = stream
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: stream.makeAsyncIterator(), abandonment: Abandonment(operation))
    }

    /// Yields the events; throws only ``FetchError``.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<FetchEvent, any Error>.Iterator
        let abandonment: Abandonment

        public mutating func next() async throws -> FetchEvent? {
            try await base.next()
        }
    }

    /// Cancels the fetch when the iterator goes away before the end: a `break` out of the loop. (The stream
    /// itself outlives the loop while this value is kept, so its own termination would come too late.)
    final class Abandonment: Sendable {
        private let operation: FetchOperation

        init(_ operation: FetchOperation) { self.operation = operation }

        deinit {
            if !operation.isFinished { operation.cancel() }
        }
    }
}

extension ImagePipeline {
    /// Fetches `request` and returns its final image: the same caches, sharing of downloads and
    /// delegate-queue rules as a ``FetchOperation``, which runs underneath.
    ///
    /// Cancelling the calling task cancels the fetch, which then throws ``FetchErrorCode/cancelled``.
    /// - Throws: ``FetchError``.
    public func image(for request: any FetchRequest, context: (any Sendable)? = nil) async throws(FetchError) -> FetchResult {
        let box = Locked<FetchOperation?>(nil)
        let result: Result<FetchResult, FetchError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let operation = operation(with: request, context: context) { continuation.resume(returning: $0) }
                box.withLock { $0 = operation }
                // A task cancelled before the operation existed: cancel it before it runs.
                if Task.isCancelled { operation.cancel() }
                fetchImage(with: operation)
            }
        } onCancel: {
            box.withLock { $0 }?.cancel()
        }
        return try result.get()
    }

    /// Starts fetching `request` and returns its events as an asynchronous sequence.
    ///
    /// The fetch starts at once, whether or not anyone iterates yet; events wait, in order, to be read. The
    /// sequence ends after ``FetchEvent/finished(_:)`` or throws the fetch's ``FetchError``. Ending the
    /// iteration early, or cancelling its task, cancels the fetch.
    /// - Parameters:
    ///   - request: what to fetch.
    ///   - context: kept with the operation (``FetchOperation/context``).
    ///   - previewDecision: what the fetch does after a ``FetchEvent/preview(_:)``: go on (the default) or stop
    ///     with ``FetchErrorCode/cancelledAfterLoadingPreview``.
    ///   - loadsProgressively: whether to show scans of progressive images (as the request's policies allow).
    public func events(for request: any FetchRequest, context: (any Sendable)? = nil,
                       previewDecision: PreviewDecision = .continueLoading, loadsProgressively: Bool = true) -> FetchEvents {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: FetchEvent.self, throwing: (any Error).self)
        let relay = FetchEventRelay(continuation, previewDecision: previewDecision, loadsProgressively: loadsProgressively)
        let operation = FetchOperation(request: request, pipeline: self, context: context, delegate: relay,
                                       holdsDelegateStrongly: true)
        continuation.onTermination = { termination in
            if case .cancelled = termination { operation.cancel() }
        }
        fetchImage(with: operation)
        return FetchEvents(operation: operation, stream: stream)
    }
}

/// Turns delegate callbacks into stream elements; held strongly by its operation until it finished. The
/// stream ends once the operation reports finished, after the final callback.
final class FetchEventRelay: FetchDelegate {
    private let continuation: AsyncThrowingStream<FetchEvent, any Error>.Continuation
    private let previewDecision: PreviewDecision
    private let loadsProgressively: Bool

    init(_ continuation: AsyncThrowingStream<FetchEvent, any Error>.Continuation, previewDecision: PreviewDecision,
         loadsProgressively: Bool) {
        self.continuation = continuation
        self.previewDecision = previewDecision
        self.loadsProgressively = loadsProgressively
    }

    func fetchOperation(_ operation: FetchOperation, didLoadPreviewImage result: FetchResult,
                        completion: @escaping @Sendable (PreviewDecision) -> Void) {
        continuation.yield(.preview(result))
        completion(previewDecision)
    }

    func fetchOperation(_ operation: FetchOperation, shouldLoadProgressivelyWithIdentifier identifier: String, url: URL,
                        imageType: ImageType, originalDimensions: PixelSize) -> Bool {
        loadsProgressively
    }

    func fetchOperation(_ operation: FetchOperation, didUpdateProgressiveImage result: FetchResult, progress: Double) {
        continuation.yield(.progressiveImage(result, progress: progress))
    }

    func fetchOperation(_ operation: FetchOperation, didLoadFirstAnimatedImageFrame result: FetchResult, progress: Double) {
        continuation.yield(.firstAnimatedFrame(result, progress: progress))
    }

    func fetchOperationDidStart(_ operation: FetchOperation) {
        continuation.yield(.started)
    }

    func fetchOperation(_ operation: FetchOperation, willAttemptToLoadFrom source: ImageLoadSource) {
        continuation.yield(.willAttemptToLoad(from: source))
    }

    func fetchOperation(_ operation: FetchOperation, didUpdateProgress progress: Double) {
        continuation.yield(.progress(progress))
    }

    func fetchOperation(_ operation: FetchOperation, didLoadFinalImage result: FetchResult) {
        continuation.yield(.finished(result))
        operation.whenFinished { [continuation] in continuation.finish() }
    }

    func fetchOperation(_ operation: FetchOperation, didFailToLoadFinalImageWith error: FetchError) {
        operation.whenFinished { [continuation] in continuation.finish(throwing: error) }
    }
}
