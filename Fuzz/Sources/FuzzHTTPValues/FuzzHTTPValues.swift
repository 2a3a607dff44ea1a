import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import FuzzSupport
@testable import ImagePipelineKit

// The pure functions the downloaders apply to what a server sends: HTTP-dates, `Content-Range` of a resumed
// download, `Location` of a redirect, the header fields themselves, the `If-Range` validator kept from them,
// and `Cache-Control` with the freshness worked out from it. A server is not trusted, so none of these may
// trap on any text.
//
// Input: byte 0 picks the status code; the rest is text, one `Name: value` field per line. Every line is
// also tried as an HTTP-date on its own, and the first line as a `Content-Range` and a `Location`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPValues(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    let input = fuzzData(bytes, count)
    guard let selector = input.first else { return 0 }
    let statuses = [200, 206, 301, 302, 303, 307, 308, 416, 304]
    let status = statuses[Int(selector) % statuses.count]
    let text = String(decoding: input.dropFirst(), as: UTF8.self)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)

    var headers = DownloadHeaders()
    for line in lines {
        checkDate(line)
        guard let colon = line.firstIndex(of: ":") else { continue }
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        headers.add(name: String(line[..<colon]), value: value)
        checkDate(value)
    }
    if let first = lines.first {
        headers.add(name: "Content-Range", value: first)
        headers.add(name: "Location", value: first)
    }
    checkHeaderEdits(headers)

    let url = URL(string: "https://images.example.com/a/b.jpg?w=100")!
    let response = DownloadResponse(statusCode: status, headers: headers, url: url, expectedContentLength: nil)
    _ = response.contentRangeStart
    _ = response.contentRangeTotal
    checkRedirect(status: status, headers: headers, from: url)

    let partial = PartialImageData(data: Data([0xFF, 0xD8]), url: url, dimensions: nil, expectedByteCount: 100,
                                   lastModified: headers["Last-Modified"], entityTag: headers["ETag"])
    if let validator = partial.ifRangeValidator, validator == partial.entityTag,
       validator.hasPrefix("W/") {
        fatalError("a weak ETag may not validate a range: \(validator)")
    }

    // What the disk cache keeps of a response for HTTP freshness: any text gives a max-age within RFC 9111's
    // bound and a finite, non-negative freshness lifetime.
    let control = CacheControl(parsing: headers.values(for: "Cache-Control"))
    if let maxAge = control.maxAge, !(0...CacheControl.maxDeltaSeconds).contains(maxAge) {
        fatalError("max-age out of range: \(maxAge)")
    }
    let received = Date(timeIntervalSince1970: 1_800_000_000)
    let metadata = HTTPCacheMetadata(headers: headers, receivedAt: received)
    let lifetime = metadata.freshnessLifetime(fallback: 86_400)
    if !lifetime.isFinite || lifetime < 0 { fatalError("freshness lifetime \(lifetime)") }
    _ = metadata.refreshed(by: headers, at: received + 100).isFresh(at: received + 200, fallbackLifetime: 86_400)

    // The URLSession downloader's path: Foundation's header dictionary into DownloadHeaders.
    var fields: [String: String] = [:]
    for (name, value) in headers where !name.isEmpty { fields[name] = value }
    if let http = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields) {
        _ = URLSessionDownloadRouter.downloadResponse(http, fallbackURL: url)
    }
    return 0
}

/// Parses `text` as an HTTP-date; a date of years 1-9999 must come back unchanged from its own formatting
/// (IMF-fixdate has four year digits), since a stored `Last-Modified` is compared with a re-parsed one.
private func checkDate(_ text: String) {
    guard let date = HTTPDate.parse(text) else { return }
    let seconds = date.timeIntervalSince1970
    guard seconds >= -62_135_596_800, seconds <= 253_402_300_799 else { return }
    let formatted = HTTPDate.format(date)
    if HTTPDate.parse(formatted) != date { fatalError("\(text) -> \(formatted) does not parse back to \(date)") }
}

/// Replacing and removing a field must leave exactly what the documentation says, whatever the names' case.
private func checkHeaderEdits(_ headers: DownloadHeaders) {
    for (name, value) in headers {
        _ = headers.values(for: name)
        var replaced = headers
        replaced.replaceOrAdd(name: name, value: value + "!")
        if replaced[name] != value + "!" || replaced.values(for: name).count != 1 {
            fatalError("replaceOrAdd(\(name)) left \(replaced.values(for: name))")
        }
        replaced.remove(name: name)
        if replaced.contains(name) { fatalError("remove(\(name)) left a field") }
    }
}

/// A followed redirect goes to http(s) with a host, never from https to http, and drops credentials when
/// it leaves the origin.
private func checkRedirect(status: Int, headers: DownloadHeaders, from url: URL) {
    guard let location = DownloadRedirectPolicy.redirectLocation(statusCode: status, headers: headers) else { return }
    let decision = DownloadRedirectPolicy.evaluate(
        location: location, from: url, redirectsFollowed: 0, currentHeaders: headers, limits: DownloadLimits())
    guard case .follow(let target, let forwarded) = decision else { return }
    guard target.scheme?.lowercased() == "https", let host = target.host, !host.isEmpty else {
        fatalError("followed \(location) to \(target) from an https page")
    }
    if !DownloadRedirectPolicy.isSameOrigin(url, target),
       DownloadRedirectPolicy.credentialHeaders.contains(where: forwarded.contains) {
        fatalError("credentials forwarded to \(target)")
    }
}
