import ImagePipelineKit

extension ServiceError {
    /// The answer a failed source fetch gets: the origin's 404/410 is a 404, its other statuses and transport
    /// failures a 502, a source over the byte or pixel limits a 413, a timeout a 504, bytes that are not an image
    /// a 422.
    init(fetchError error: FetchError) {
        if let status = error.httpStatusCode {
            self.init(originStatus: status)
            return
        }
        switch error.underlying {
        case let download as DownloadError:
            self.init(downloadError: download)
        case let download as ImageDownloadError:
            switch download {
            case .download(let underlying): self.init(downloadError: underlying)
            case .httpStatus(let status): self.init(originStatus: status)
            case .cancelled: self = .gatewayTimeout
            default: self = .badGateway("\(download)")
            }
        case let codec as ImageCodecError:
            if case .limitExceeded = codec {
                self = .tooLarge("the source exceeds a decoding limit (\(codec))")
            } else {
                self = .undecodableSource("\(codec)")
            }
        default:
            switch error.code {
            case .cancelled: self = .gatewayTimeout
            case .couldNotDecodeImage: self = .undecodableSource("\(error)")
            default: self = .badGateway("\(error)")
            }
        }
    }

    /// The origin's error status: 404 and 410 stay a 404, any other is a 502.
    private init(originStatus status: Int) {
        self = status == 404 || status == 410 ? .sourceNotFound : .badGateway("the origin answered \(status)")
    }

    private init(downloadError: DownloadError) {
        switch downloadError {
        case .responseTooLarge(let limit): self = .tooLarge("the source is larger than \(limit) bytes")
        case .connectTimedOut, .idleTimedOut, .deadlineExceeded, .transferTooSlow: self = .gatewayTimeout
        case .tooManyRedirects, .invalidRedirect, .insecureRedirect: self = .badGateway("the origin redirected; redirects are not followed")
        case .cancelled: self = .gatewayTimeout
        default: self = .badGateway("\(downloadError)")
        }
    }
}
