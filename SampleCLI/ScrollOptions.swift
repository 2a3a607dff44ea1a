import ArgumentParser
import ImageOriginServer
import ImagePipelineKit

/// `--feed`.
enum FeedChoice: String, ExpressibleByArgument, CaseIterable {
    case photos, small
}

/// `--warm`.
enum WarmCaches: String, ExpressibleByArgument, CaseIterable {
    case cold, disk, memory
}

/// The embedded origin of `sample-cli scroll`.
enum ScrollOrigin {
    static func start(items: Int, assets: ScrollAssets, network: NetworkProfile,
                      model: LinkModel) async throws -> ImageOriginServer {
        let server = try await ImageOriginServer.start(port: 0)
        assets.serve(on: server, items: items)
        switch model {
        case .shared: server.setLink(network.link)
        case .perResponse: server.setShaping(network.perResponseShaping)
        }
        return server
    }
}

/// `--script`.
enum ScrollScript: String, ExpressibleByArgument, CaseIterable {
    case fling, steady, backAndForth = "back-and-forth", browse
}

/// `--network`: a published throttling profile (see `OriginLink`'s presets for the sources).
enum NetworkProfile: String, ExpressibleByArgument, CaseIterable {
    case loopback, wifi, lte, slow4g, threeG = "3g"

    /// The shared link of `--link-model shared`; `nil` for loopback.
    var link: OriginLink? {
        switch self {
        case .loopback: nil
        case .wifi: .wifi
        case .lte: .lte
        case .slow4g: .slow4G
        case .threeG: .threeG
        }
    }

    /// `--link-model per-response`: the profile's bandwidth for each response on its own, and its round trip
    /// before each head.
    var perResponseShaping: OriginShaping {
        guard let link else { return OriginShaping() }
        return OriginShaping(bytesPerSecond: link.downlinkBytesPerSecond, firstByteLatency: link.roundTrip)
    }
}

/// `--link-model`.
enum LinkModel: String, ExpressibleByArgument, CaseIterable {
    case shared, perResponse = "per-response"
}

/// `--disappearance`.
enum DisappearanceChoice: String, ExpressibleByArgument, CaseIterable {
    case none, cancel, lower, unload

    var behavior: DisappearanceBehavior {
        switch self {
        case .none: .none
        case .cancel: .cancelImageFetch
        case .lower: .lowerImageFetchPriority
        case .unload: .unload
        }
    }
}
