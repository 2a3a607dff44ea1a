import Foundation
import Synchronization
import PipelineLocking

/// Puts an image into a pipeline's caches (TIP's store operation).
///
/// An asynchronous Foundation `Operation` on ``GlobalConfiguration/operationQueue``: other operations can
/// wait for it (``makeDependency(of:)``). It runs the request's hydration first, clears the identifier's
/// renditions, writes the disk cache (forced unless the image is a placeholder) and, when the request carries
/// encoded data, the memory cache; otherwise it drops the identifier's memory entry, which the new image
/// makes stale. The completion runs on ``GlobalConfiguration/delegateQueue``.
///
/// Store operations cannot be cancelled: `cancel()` does nothing (as in TIP, where it is an error).
public final class StoreOperation: Operation, @unchecked Sendable {
    // @unchecked: `state` is behind its lock, `lifecycle` is thread-safe; everything else is immutable after init.

    /// Called once with the operation, whether the image is now cached, and the error when it is not.
    public typealias Completion = @Sendable (StoreOperation, Bool, (any Error)?) -> Void

    private struct State {
        var error: (any Error)?
        var succeeded = false
    }

    public let request: StoreRequest
    private let pipeline: ImagePipeline
    private let completion: Completion?
    private let state = Locked(State())
    private let lifecycle = OperationLifecycle()

    init(request: StoreRequest, pipeline: ImagePipeline, completion: Completion?) {
        self.request = request
        self.pipeline = pipeline
        self.completion = completion
    }

    /// The error that failed the store, once finished.
    public var error: (any Error)? { state.withLock { $0.error } }
    /// Whether the image was stored, once finished.
    public var succeeded: Bool { state.withLock { $0.succeeded } }

    /// Makes `operation` wait until this store has finished.
    public func makeDependency(of operation: Operation) {
        operation.addDependency(self)
    }

    public override var isAsynchronous: Bool { true }
    public override var isExecuting: Bool { lifecycle.isExecuting }
    public override var isFinished: Bool { lifecycle.isFinished }

    public override func cancel() {}

    public override func start() {
        guard lifecycle.begin(self) else { return }
        Task {
            let result: Result<Bool, any Error>
            do {
                result = .success(try await store())
            } catch {
                result = .failure(error)
            }
            finish(with: result)
        }
    }

    private func finish(with result: Result<Bool, any Error>) {
        let (succeeded, error): (Bool, (any Error)?) = switch result {
        case .success(let stored): (stored, stored ? nil : StoreError(.storageFailed))
        case .failure(let error): (false, error)
        }
        state.withLock {
            $0.succeeded = succeeded
            $0.error = error
        }
        guard let completion else { return lifecycle.finish(self) }
        // The completion is delivered before the operation reports finished, so dependents see its effects.
        pipeline.configuration.delegateQueue.async { [self] in
            DelegateQueueDiagnostics.delegateTurn { completion(self, succeeded, error) }
            lifecycle.finish(self)
        }
    }

    // MARK: - The store itself (runs off the delegate queue)

    /// TIP's JPEG quality for stored images ("JFIF 85").
    static let jpegQuality = 0.575

    private func store() async throws -> Bool {
        let request = try await request.hydration?(request, pipeline) ?? request
        guard let source = request.source else { throw StoreError(.imageNotProvided) }
        let identifier = request.resolvedIdentifier
        let placeholder = request.options.contains(.treatAsPlaceholder)

        let data: Data
        var dimensions = request.dimensions
        var isAnimated = false
        switch source {
        case .data(let bytes):
            data = bytes
        case .file(let url):
            do { data = try Data(contentsOf: url) } catch { throw StoreError(.storageFailed, underlying: error) }
        case .image(let container):
            dimensions = dimensions ?? container.dimensions
            isAnimated = container.isAnimated
            // PNG keeps alpha; JPEG is smaller for everything opaque. (No GIF encoder: animations keep frame 1.)
            let type: ImageType = container.bitmap.hasTransparency ? .png : .jpeg
            do { data = try CodecCatalogue.shared.encode(container, as: type, quality: Self.jpegQuality) } catch {
                throw StoreError(.storageFailed, underlying: error)
            }
        }
        if dimensions == nil {
            // Learn the size from the bytes; a thumbnail-sized decode is enough (JPEG decodes at 1/8).
            do {
                let tiny = TargetSizing(dimensions: PixelSize(width: 1, height: 1), contentMode: .fit)
                let decoded = try CodecCatalogue.shared.decode(data, target: tiny)
                dimensions = decoded.properties.dimensions
                isAnimated = decoded.properties.isAnimated
            } catch {
                throw StoreError(.storageFailed, underlying: error)
            }
        }
        let entry = CachedImageData(
            data: data, url: request.url, dimensions: dimensions ?? PixelSize(width: 0, height: 0),
            isPlaceholder: placeholder, isAnimated: isAnimated, timeToLive: request.timeToLive,
            updatesExpiryOnAccess: !request.options.contains(.doNotResetExpiryOnAccess))

        var storesInMemory = false
        if case .data = source { storesInMemory = true }
        guard pipeline.caches.has(.disk) || storesInMemory else { throw StoreError(.noCacheForStoring) }

        guard pipeline.caches.store(entry, identifier: identifier, inMemory: storesInMemory, forced: !placeholder) else {
            return false
        }
        var image: ImageContainer?
        if case .image(let container) = source { image = container }
        pipeline.announceStore(StoredImageInfo(
            pipelineIdentifier: pipeline.identifier, identifier: identifier, url: request.url, dimensions: entry.dimensions,
            isPlaceholder: placeholder, wasManuallyStored: true, image: image))
        return true
    }
}

extension ImagePipeline {
    /// Stores `request`'s image in this pipeline's caches on ``GlobalConfiguration/operationQueue``.
    ///
    /// - Returns: the running operation; make fetches depend on it with ``StoreOperation/makeDependency(of:)``.
    @discardableResult
    public func store(_ request: StoreRequest, completion: StoreOperation.Completion? = nil) -> StoreOperation {
        let operation = StoreOperation(request: request, pipeline: self, completion: completion)
        configuration.operationQueue.addOperation(operation)
        return operation
    }
}
