import Foundation
import Synchronization
import PipelineLocking

/// Why a pipeline could not be created.
public enum ImagePipelineError: Error, Hashable, Sendable {
    /// Empty, or with characters outside `[A-Za-z0-9._-]` (or exactly `.`/`..`).
    case invalidIdentifier(String)
    /// A live pipeline already has this identifier (as in TIP).
    case identifierInUse(String)
}

/// A named set of caches — rendered, memory and disk — that fetches and stores go through (TIP's
/// `TIPImagePipeline`).
///
/// Identifiers are unique among live pipelines; releasing a pipeline frees its identifier and gives its
/// rendered and memory bytes back to the global totals (its disk entries stay for the next pipeline with the
/// same identifier). Every pipeline's caches share the limits of its ``GlobalConfiguration``.
public final class ImagePipeline: Sendable {
    /// The pipeline's name, also its directory's name under the cache root.
    public let identifier: String
    /// Decoded, scaled images, looked up synchronously.
    public var renderedCache: RenderedCache { caches.rendered }
    /// Encoded image bytes and partial downloads in memory.
    public var memoryCache: MemoryCache { caches.memory }
    /// Encoded image bytes and partial downloads on disk; `nil` when the directory could not be created (the
    /// pipeline then runs without a disk cache, as TIP does).
    public var diskCache: DiskCache? { caches.disk }

    /// Why the disk cache is off, or `nil` when it is open. A pipeline whose directory or index cannot be
    /// opened works from memory and the network, reports
    /// ``ImagePipelineProblem/diskCacheUnavailable(pipeline:error:)``, and tries again every 30 seconds.
    public var diskCacheUnavailability: DiskCacheError? {
        caches.diskUnavailability
    }
    /// Every cache tier of this pipeline, and how images percolate between them.
    let caches: PipelineCaches
    /// The configuration whose limits the caches share.
    public let configuration: GlobalConfiguration
    /// Decodes running for this pipeline's fetches, which fetches of the same bytes join.
    let sharedDecodes = SharedDecodes()
    /// Fetches in the operation queue that a rendition made by another fetch can answer at once.
    let waitingFetches = WaitingFetches()
    /// Fetch helpers to wake when the image they show is stored.
    let storedImageWatchers = StoredImageWatchers()
    private let ownObserver = Locked<(any ImagePipelineObserver)?>(nil)
    private let extraCaches = Locked<[any AdditionalImageCache]>([])
    private let freshness = Locked(CacheFreshnessPolicy.timeToLive)

    /// How the pipeline decides whether an image on disk may be used without asking the origin: TIP's time to
    /// live (the default), or HTTP caching with revalidation (see ``CacheFreshnessPolicy``). Read by each fetch
    /// as it reaches the disk cache; the rendered and memory caches answer without asking in either policy.
    public var freshnessPolicy: CacheFreshnessPolicy {
        get { freshness.withLock { $0 } }
        set { freshness.withLock { $0 = newValue } }
    }

    /// Read-only caches tried, in order, after the disk caches (TIP's `additionalCaches`).
    public var additionalCaches: [any AdditionalImageCache] {
        get { extraCaches.withLock { $0 } }
        set { extraCaches.withLock { $0 = newValue } }
    }

    /// This pipeline's own observer, held strongly (TIP's `observer`); the global ones are on
    /// ``GlobalConfiguration/addObserver(_:)``.
    public var observer: (any ImagePipelineObserver)? {
        get { ownObserver.withLock { $0 } }
        set { ownObserver.withLock { $0 = newValue } }
    }

    /// Decoded renditions kept on disk, read before cached bytes are decoded; `nil` until
    /// ``useRenditionTables(sides:capacity:)``.
    public var renditionTables: RenditionTables? { caches.renditionTables }

    /// Keeps fetched images' renditions in memory-mapped tables in the pipeline's directory, one table per size
    /// class in `sides` (the largest width or height it holds), each with `capacity` slots, so that a fetch of
    /// a cached image at a target size it was shown at before needs no decode, in this process or the next
    /// (see ``RenditionTables``). Each slot takes `side × side × 4` bytes plus a page of disk space. Calling it
    /// again replaces the tables.
    /// - Throws: ``ImageTableError`` when a table cannot be opened, or there is no disk cache to keep it beside.
    public func useRenditionTables(sides: [Int], capacity: Int) throws(ImageTableError) {
        guard let directory = diskCache?.directory else { throw .fileSystem(operation: "open", errno: ENOENT) }
        let tables = try RenditionTables(directory: directory, sides: sides, capacity: capacity)
        caches.useRenditionTables(tables)
    }

    /// `$XDG_CACHE_HOME/ImagePipelineKit`, else `~/.cache/ImagePipelineKit`.
    public static var defaultCacheRoot: URL {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache")
        return base.appendingPathComponent("ImagePipelineKit")
    }

    /// A pipeline named `identifier`, its disk cache in `cacheRoot/identifier`.
    /// - Throws: ``ImagePipelineError`` for an invalid identifier or one a live pipeline holds.
    public init(
        identifier: String, configuration: GlobalConfiguration = .shared, cacheRoot: URL = ImagePipeline.defaultCacheRoot,
        fileSystem: any CacheFileSystem = POSIXCacheFileSystem()
    ) throws(ImagePipelineError) {
        guard Self.isValid(identifier) else { throw .invalidIdentifier(identifier) }
        guard PipelineRegistry.shared.claim(identifier) else { throw .identifierInUse(identifier) }
        self.identifier = identifier
        self.configuration = configuration
        caches = PipelineCaches(
            rendered: RenderedCache(owner: identifier, pool: configuration.renderedPool),
            memory: MemoryCache(owner: identifier, pool: configuration.memoryPool),
            disk: DiskCacheOpener(
                open: { try DiskCache(directory: cacheRoot.appendingPathComponent(identifier).path, owner: identifier,
                                      pool: configuration.diskPool, fileSystem: fileSystem) },
                report: { [weak configuration] error in
                    configuration?.report(.diskCacheUnavailable(pipeline: identifier, error: error))
                }))
        PipelineRegistry.shared.register(self)
        configuration.log(.debug, "pipeline stood up", metadata: ["pipeline": .string(identifier), "cache-root": .string(cacheRoot.path)])
    }

    deinit {
        PipelineRegistry.shared.release(identifier)
    }

    /// Identifiers of the pipelines with a directory under `cacheRoot`, loaded in this process or not.
    public static func knownIdentifiers(cacheRoot: URL = ImagePipeline.defaultCacheRoot) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: cacheRoot.path)) ?? []
        return names.filter { name in
            var isDirectory: ObjCBool = false
            return isValid(name) && FileManager.default.fileExists(
                atPath: cacheRoot.appendingPathComponent(name).path, isDirectory: &isDirectory) && isDirectory.boolValue
        }.sorted()
    }

    /// Non-empty, only `[A-Za-z0-9._-]`, and not a directory alias.
    static func isValid(_ identifier: String) -> Bool {
        !identifier.isEmpty && identifier != "." && identifier != ".." && identifier.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }
}
