import Foundation
import ImageOriginServer
import ImagePipelineKit
import Logging
import Testing
@testable import ImagePipelineService

/// A service in the test process, fetching from a loopback origin through real pipelines with caches in a
/// temporary directory.
final class ServiceFixture: Sendable {
    let origin: ImageOriginServer
    let pipelines: ImageServicePipelines
    let service: ImageService
    let cacheDirectory: URL

    /// The sample photos committed with the package (SampleCLI/Images), by file name.
    static func photo(_ name: String) throws -> Data {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        return try Data(contentsOf: root.appendingPathComponent("SampleCLI/Images/\(name)"))
    }

    static func start(
        allowsPrivateAddresses: Bool = true, configure: (inout ImageServiceConfiguration) -> Void = { _ in }
    ) async throws -> ServiceFixture {
        let origin = try await ImageOriginServer.start()
        var configuration = ImageServiceConfiguration()
        configuration.allowsUnsafeURLs = true
        configuration.securityKeys = ["test-key"]
        configuration.sourcePolicy = SourcePolicy(allowedSources: ["127.0.0.1:\(origin.port)"],
                                                  allowsPrivateAddresses: allowsPrivateAddresses)
        configure(&configuration)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipk-service-\(UUID().uuidString)")
        let pipelines = try ImageServicePipelines(cacheDirectory: directory, limits: configuration.limits,
                                                  name: "svc-\(UUID().uuidString.prefix(8))")
        var logger = Logger(label: "image-service-test")
        logger.logLevel = .warning   // one line per request is for operators, not for the test log
        let service = ImageService(configuration: configuration, sourcePipeline: pipelines.sources,
                                   resultStore: pipelines.results, logger: logger)
        return ServiceFixture(origin: origin, pipelines: pipelines, service: service, cacheDirectory: directory)
    }

    private init(origin: ImageOriginServer, pipelines: ImageServicePipelines, service: ImageService, cacheDirectory: URL) {
        self.origin = origin
        self.pipelines = pipelines
        self.service = service
        self.cacheDirectory = cacheDirectory
    }

    /// `host:port` of the origin, as a thumbor source.
    var source: String { "127.0.0.1:\(origin.port)" }

    func get(_ path: String, accept: String? = nil, ifNoneMatch: String? = nil) async -> ImageServiceResponse {
        await service.respond(to: ImageServiceRequest(path: path, accept: accept, ifNoneMatch: ifNoneMatch))
    }

    func shutdown() async {
        try? await pipelines.shutdown()
        try? await origin.shutdown()
        try? FileManager.default.removeItem(at: cacheDirectory)
    }
}

extension ImageServiceResponse {
    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body decoded by the package's own codecs.
    func decoded() throws -> Bitmap {
        try CodecCatalogue.shared.decode(body).container.bitmap
    }
}

/// Peak signal-to-noise ratio of two bitmaps of the same size over their RGB channels, in dB.
func psnr(_ a: Bitmap, _ b: Bitmap) -> Double {
    precondition(a.size == b.size)
    var squares = 0.0
    for y in 0..<a.height {
        for x in 0..<a.width {
            let p = a.pixel(x: x, y: y), q = b.pixel(x: x, y: y)
            for (u, v) in [(p.r, q.r), (p.g, q.g), (p.b, q.b)] {
                let difference = Double(u) - Double(v)
                squares += difference * difference
            }
        }
    }
    let mean = squares / Double(a.width * a.height * 3)
    return mean == 0 ? .infinity : 10 * log10(255 * 255 / mean)
}
