import Foundation

/// How a request's URL is loaded, or why it is not.
package enum DownloadSource: Sendable, Equatable {
    /// Over HTTP(S), by the downloader's transport.
    case http
    /// From the file at `path`, by ``FileDownload``.
    case file(path: String)

    /// The source of `request`'s URL under its limits.
    package static func of(_ request: DownloadRequest) -> Result<DownloadSource, DownloadError> {
        let scheme = request.url.scheme?.lowercased() ?? ""
        switch scheme {
        case "http", "https":
            guard let host = request.url.host, !host.isEmpty else {
                return .failure(.invalidURL(request.url.absoluteString))
            }
            return .success(.http)
        case "file" where request.limits.allowsFileURLs:
            return .success(.file(path: request.url.path))
        default:
            return .failure(.unsupportedScheme(scheme))
        }
    }
}
