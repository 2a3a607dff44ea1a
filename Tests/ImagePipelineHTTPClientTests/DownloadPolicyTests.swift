import Foundation
import ImagePipelineKit
import Testing

/// The pure parts of the download contract: the redirect policy (the https→http rule cannot be tried against
/// the plain-HTTP loopback origin), header lookup, priority mapping and error codes.
@Suite("Download policy and value types")
struct DownloadPolicyTests {
    private func url(_ string: String) -> URL { URL(string: string)! }

    private func decide(_ location: String, from: String, followed: Int = 0, headers: DownloadHeaders = [:],
                        limits: DownloadLimits = DownloadLimits()) -> DownloadRedirectPolicy.Decision {
        DownloadRedirectPolicy.evaluate(location: location, from: url(from), redirectsFollowed: followed,
                                        currentHeaders: headers, limits: limits)
    }

    @Test("https → http is refused as insecure, on the same host too")
    func insecureRedirectRefused() {
        #expect(decide("http://example.com/a.jpg", from: "https://example.com/b.jpg")
                == .refuse(.insecureRedirect(from: url("https://example.com/b.jpg"), to: url("http://example.com/a.jpg"))))
        #expect(decide("HTTP://cdn.example.com/a.jpg", from: "https://example.com/b.jpg")
                == .refuse(.insecureRedirect(from: url("https://example.com/b.jpg"), to: url("HTTP://cdn.example.com/a.jpg"))))
    }

    @Test("http → https, https → https and http → http are followed")
    func allowedRedirects() {
        #expect(decide("https://example.com/a.jpg", from: "http://example.com/a.jpg")
                == .follow(url: url("https://example.com/a.jpg"), headers: [:]))
        #expect(decide("https://cdn.example.com/a.jpg", from: "https://example.com/a.jpg")
                == .follow(url: url("https://cdn.example.com/a.jpg"), headers: [:]))
        #expect(decide("http://example.com:8080/a.jpg", from: "http://example.com/a.jpg")
                == .follow(url: url("http://example.com:8080/a.jpg"), headers: [:]))
    }

    @Test("A relative Location resolves against the URL that answered")
    func relativeLocation() {
        #expect(decide("/img/b.jpg?w=2", from: "https://example.com/x/a.jpg")
                == .follow(url: url("https://example.com/img/b.jpg?w=2"), headers: [:]))
        #expect(decide("b.jpg", from: "https://example.com/x/a.jpg")
                == .follow(url: url("https://example.com/x/b.jpg"), headers: [:]))
        #expect(decide("//cdn.example.com/b.jpg", from: "https://example.com/x/a.jpg")
                == .follow(url: url("https://cdn.example.com/b.jpg"), headers: [:]))
    }

    @Test("The count limit: redirect number maxRedirects+1 is refused; 0 refuses every redirect")
    func redirectLimit() {
        let limits = DownloadLimits(maxRedirects: 5)
        if case .follow = decide("/b", from: "http://example.com/a", followed: 4, limits: limits) {} else {
            Issue.record("the fifth redirect must be followed")
        }
        #expect(decide("/b", from: "http://example.com/a", followed: 5, limits: limits) == .refuse(.tooManyRedirects(5)))
        #expect(decide("/b", from: "http://example.com/a", followed: 0, limits: DownloadLimits(maxRedirects: 0))
                == .refuse(.tooManyRedirects(0)))
        #expect(DownloadLimits().maxRedirects == 5)
    }

    @Test("Redirects never lead to file or other non-HTTP schemes, even when file URLs are allowed")
    func nonHTTPTargetsRefused() {
        let limits = DownloadLimits(allowsFileURLs: true)
        #expect(decide("file:///etc/passwd", from: "http://example.com/a", limits: limits) == .refuse(.unsupportedScheme("file")))
        #expect(decide("ftp://example.com/a.jpg", from: "http://example.com/a") == .refuse(.unsupportedScheme("ftp")))
        #expect(decide("data:image/png;base64,AAAA", from: "http://example.com/a") == .refuse(.unsupportedScheme("data")))
    }

    @Test("A Location that is not a URL is an invalid redirect")
    func invalidLocation() {
        #expect(decide("http://", from: "http://example.com/a") == .refuse(.invalidRedirect(location: "http://")))
    }

    @Test("Credentials are dropped across origins and kept within one; Range and If-Range always stay")
    func credentialsAcrossOrigins() {
        let headers: DownloadHeaders = ["Authorization": "Bearer x", "Cookie": "a=b", "Range": "bytes=10-",
                                        "If-Range": "\"e\"", "X-Foo": "bar"]
        #expect(decide("/b.jpg", from: "https://example.com/a.jpg", headers: headers)
                == .follow(url: url("https://example.com/b.jpg"), headers: headers))
        #expect(decide("https://example.com:443/b.jpg", from: "https://example.com/a.jpg", headers: headers)
                == .follow(url: url("https://example.com:443/b.jpg"), headers: headers))
        let stripped: DownloadHeaders = ["Range": "bytes=10-", "If-Range": "\"e\"", "X-Foo": "bar"]
        #expect(decide("https://cdn.example.com/b.jpg", from: "https://example.com/a.jpg", headers: headers)
                == .follow(url: url("https://cdn.example.com/b.jpg"), headers: stripped))
        #expect(decide("https://example.com:8443/b.jpg", from: "https://example.com/a.jpg", headers: headers)
                == .follow(url: url("https://example.com:8443/b.jpg"), headers: stripped))
    }

    @Test("Only 301, 302, 303, 307 and 308 with a Location redirect")
    func redirectStatuses() {
        let location: DownloadHeaders = ["location": "/b"]
        for status in [301, 302, 303, 307, 308] {
            #expect(DownloadRedirectPolicy.redirectLocation(statusCode: status, headers: location) == "/b")
        }
        for status in [200, 300, 304, 305, 306, 404] {
            #expect(DownloadRedirectPolicy.redirectLocation(statusCode: status, headers: location) == nil)
        }
        #expect(DownloadRedirectPolicy.redirectLocation(statusCode: 302, headers: [:]) == nil)
    }

    @Test("Headers keep order and repeats; lookups ignore case")
    func headers() {
        var headers: DownloadHeaders = ["Accept": "image/webp", "X-Foo": "1"]
        headers.add(name: "x-foo", value: "2")
        #expect(headers["X-FOO"] == "1")
        #expect(headers.values(for: "x-Foo") == ["1", "2"])
        #expect(headers.map(\.name) == ["Accept", "X-Foo", "x-foo"])
        headers.replaceOrAdd(name: "X-Foo", value: "3")
        #expect(headers.values(for: "x-foo") == ["3"])
        #expect(headers.map(\.name) == ["Accept", "X-Foo"])
        headers.remove(name: "ACCEPT")
        #expect(!headers.contains("accept"))
        #expect(headers.count == 1)
        #expect(headers["missing"] == nil)
    }

    @Test("Priority maps onto 0...1 evenly, normal at URLSession's default 0.5 (not TIP's integer division)")
    func priorityMapping() {
        #expect(Operation.QueuePriority.veryLow.relativeValue == 0)
        #expect(Operation.QueuePriority.low.relativeValue == 0.25)
        #expect(Operation.QueuePriority.normal.relativeValue == 0.5)
        #expect(Operation.QueuePriority.high.relativeValue == 0.75)
        #expect(Operation.QueuePriority.veryHigh.relativeValue == 1)
    }

    @Test("Error codes are stable")
    func errorCodes() {
        #expect(DownloadError.cancelled.code.rawValue == -1)
        #expect(DownloadError.unsupportedScheme("ftp").code.rawValue == 1)
        #expect(DownloadError.tooManyRedirects(5).code.rawValue == 2)
        #expect(DownloadError.insecureRedirect(from: url("https://a"), to: url("http://a")).code.rawValue == 3)
        #expect(DownloadError.invalidRedirect(location: "x").code.rawValue == 4)
        #expect(DownloadError.responseTooLarge(limit: 1).code.rawValue == 5)
        #expect(DownloadError.connectTimedOut.code.rawValue == 6)
        #expect(DownloadError.idleTimedOut.code.rawValue == 7)
        #expect(DownloadError.transport(description: "x").code.rawValue == 8)
    }
}
