import Foundation
import ImagePipelineHTTPClient
import ImagePipelineKit

/// The two pipelines a service runs on, on a configuration of their own: `sources` fetches and caches the
/// source images (AsyncHTTPClient, shared downloads, memory and disk caches), `results` keeps the rendered
/// answers. Their downloads follow no redirect (a redirect could lead to an address the source policy refuses),
/// stop at ``ServiceLimits/maxSourceBytes`` and at the request deadline, and check the addresses of a source's
/// host name again as they start: a plain `http` download connects to the address it checked, so a name that
/// resolves differently a moment after the request was checked cannot send it to a private address.
public final class ImageServicePipelines: Sendable {
    public let configuration: GlobalConfiguration
    public let sources: ImagePipeline
    public let results: ImagePipeline
    private let downloader: HTTPClientDownloader

    /// Opens both pipelines' caches under `cacheDirectory` (`NAME-sources/` and `NAME-results/`), shared with
    /// any other process that opens the same directory. `name` must be unique in the process (a pipeline's
    /// identifier is). `sourcePolicy` says whether a download may reach a private address (give the service's).
    /// - Throws: ``ImagePipelineError`` when a pipeline cannot be made.
    public convenience init(cacheDirectory: URL, limits: ServiceLimits, sourcePolicy: SourcePolicy = SourcePolicy(),
                            concurrentDownloads: Int = 32, name: String = "image-service") throws {
        try self.init(cacheDirectory: cacheDirectory, limits: limits, sourcePolicy: sourcePolicy,
                      concurrentDownloads: concurrentDownloads, name: name, resolve: SourcePolicy.resolve)
    }

    /// As the public initializer, with the host-name resolver the downloads use (a test's).
    init(cacheDirectory: URL, limits: ServiceLimits, sourcePolicy: SourcePolicy, concurrentDownloads: Int = 32,
         name: String, resolve: @escaping @Sendable (String) async -> [SourceAddress]) throws {
        configuration = GlobalConfiguration()
        var downloadLimits = DownloadLimits()
        downloadLimits.maxResponseBytes = limits.maxSourceBytes
        downloadLimits.maxRedirects = 0
        downloadLimits.totalTimeout = limits.requestDeadline
        configuration.downloadLimits = downloadLimits
        var client = HTTPClientDownloader.defaultConfiguration()
        client.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = concurrentDownloads
        downloader = HTTPClientDownloader(configuration: client)
        configuration.imageDownloader = PinnedSourceDownloader(
            transport: downloader, allowsPrivateAddresses: sourcePolicy.allowsPrivateAddresses, resolve: resolve)
        configuration.maxConcurrentImagePipelineDownloadCount = concurrentDownloads
        // The caches', downloads' and decodes' gauges, for whoever scrapes the metrics.
        configuration.gaugeRecordingInterval = .seconds(5)
        // Decodes take the render's processing slots (the renderer's edits and encodes take them too).
        configuration.processingSlots = ProcessingSlots(count: limits.maxRendersProcessing)
        // A source's decode asks for short scheduler slices (kernels 6.12 and later), so that the event loops that
        // answer cached thumbnails and refuse what cannot wait get a core soon after they wake, beside decodes
        // that hold it for milliseconds. Change it on `configuration` for another balance.
        configuration.decodeTimeSlice = .microseconds(100)
        sources = try ImagePipeline(identifier: "\(name)-sources", configuration: configuration, cacheRoot: cacheDirectory)
        results = try ImagePipeline(identifier: "\(name)-results", configuration: configuration, cacheRoot: cacheDirectory)
    }

    /// Closes the downloader's connections; call once no request is in flight.
    public func shutdown() async throws {
        try await downloader.shutdown()
    }
}
