import Foundation

/// Which redirects a download follows, as a pure function both downloaders call (and tests call directly,
/// since the https→http rule needs a TLS origin the test server does not have).
///
/// A response redirects when its status is 301, 302, 303, 307 or 308 and it has a `Location`; any other 3xx
/// (300, 304, …) is an ordinary response. A redirect is followed when, in this order:
/// 1. fewer than ``DownloadLimits/maxRedirects`` redirects were followed so far (else
///    ``DownloadError/tooManyRedirects(_:)``);
/// 2. `Location`, resolved against the URL that answered, is a URL with a scheme (else
///    ``DownloadError/invalidRedirect(location:)``);
/// 3. its scheme is `http` or `https` — never `file`, whatever ``DownloadLimits/allowsFileURLs`` says (else
///    ``DownloadError/unsupportedScheme(_:)``) — and it has a host (else ``DownloadError/invalidRedirect(location:)``);
/// 4. it does not go from `https` to `http` (else ``DownloadError/insecureRedirect(from:to:)``).
///
/// The redirected request is a `GET` with the same header fields, except that `Authorization`, `Cookie` and
/// `Proxy-Authorization` are dropped when the target is on another origin (scheme, host or port differs).
/// `Range` and `If-Range` stay: the coordinator's resume still applies to the same resource.
public enum DownloadRedirectPolicy {
    /// The statuses that redirect when a `Location` is present.
    public static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// Header fields that carry credentials, not forwarded to another origin.
    public static let credentialHeaders = ["Authorization", "Cookie", "Proxy-Authorization"]

    /// What to do with a redirect.
    public enum Decision: Sendable, Equatable {
        /// Request `url` with `headers` next.
        case follow(url: URL, headers: DownloadHeaders)
        /// Fail the download with this error.
        case refuse(DownloadError)
    }

    /// The `Location` of a response that redirects, or `nil` when `statusCode` and `headers` make an ordinary
    /// response.
    public static func redirectLocation(statusCode: Int, headers: DownloadHeaders) -> String? {
        guard redirectStatuses.contains(statusCode), let location = headers["Location"], !location.isEmpty else {
            return nil
        }
        return location
    }

    /// Decides a redirect to `location` (as the server sent it) from `currentURL`, when `redirectsFollowed`
    /// redirects were already followed for `request`; `currentHeaders` are the fields the redirecting request
    /// was sent with (the request's own for the first redirect).
    public static func evaluate(location: String, from currentURL: URL, redirectsFollowed: Int,
                                currentHeaders: DownloadHeaders, limits: DownloadLimits) -> Decision {
        guard redirectsFollowed < limits.maxRedirects else {
            return .refuse(.tooManyRedirects(limits.maxRedirects))
        }
        guard let target = URL(string: location, relativeTo: currentURL)?.absoluteURL,
              let scheme = target.scheme?.lowercased()
        else {
            return .refuse(.invalidRedirect(location: location))
        }
        guard scheme == "http" || scheme == "https" else {
            return .refuse(.unsupportedScheme(scheme))
        }
        guard let host = target.host, !host.isEmpty else {
            return .refuse(.invalidRedirect(location: location))
        }
        if currentURL.scheme?.lowercased() == "https" && scheme == "http" {
            return .refuse(.insecureRedirect(from: currentURL, to: target))
        }
        var headers = currentHeaders
        if !isSameOrigin(currentURL, target) {
            for name in credentialHeaders { headers.remove(name: name) }
        }
        return .follow(url: target, headers: headers)
    }

    /// Whether `a` and `b` have the same scheme, host and effective port.
    public static func isSameOrigin(_ a: URL, _ b: URL) -> Bool {
        func origin(_ url: URL) -> (String, String, Int?) {
            let scheme = url.scheme?.lowercased() ?? ""
            let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil)
            return (scheme, url.host?.lowercased() ?? "", port)
        }
        return origin(a) == origin(b)
    }
}

/// How a request's URL is loaded, or why it is not.
package enum DownloadSource: Sendable, Equatable {
    case http
    case file(path: String)

    /// The source of `request`'s URL under its limits.
    package static func of(_ request: DownloadRequest) -> Result<DownloadSource, DownloadError> {
        let scheme = request.url.scheme?.lowercased() ?? ""
        switch scheme {
        case "http", "https":
            return .success(.http)
        case "file" where request.limits.allowsFileURLs:
            return .success(.file(path: request.url.path))
        default:
            return .failure(.unsupportedScheme(scheme))
        }
    }
}
