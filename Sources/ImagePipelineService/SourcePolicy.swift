import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Which sources the service may fetch: an image proxy is a way into whatever network it runs in, so a source
/// must be on the allow-list and resolve to public addresses only.
///
/// - The allow-list holds host names (`images.example.com`, `*.example.com` for every subdomain), hosts with a
///   port (`127.0.0.1:8080`), or URL prefixes (`https://cdn.example.com/photos/`). Empty, any host is allowed
///   (its addresses are still checked).
/// - Every address the host resolves to is checked, and one refused address refuses the source: loopback,
///   the unspecified address (`0.0.0.0`, `::`, which reach the host itself), private ranges (RFC 1918, carrier-
///   grade NAT, IPv6 unique-local), link-local, multicast and reserved ranges, unless
///   ``allowsPrivateAddresses`` is on (tests and demos with a loopback origin).
/// - Redirects are not followed (the service's downloads allow none), so a public source cannot send the
///   service to a private address. The addresses are checked before the request goes to the pipeline, and
///   again when its download starts (``ImageServicePipelines``): a plain `http` download then connects to the
///   address it checked; an `https` one is resolved once more by its transport, and an address rebound in that
///   moment would have to present a certificate for the source's name. An egress firewall that denies private
///   destinations is still the last word.
public struct SourcePolicy: Sendable {
    public var allowedSources: [String]
    public var allowsPrivateAddresses: Bool

    public init(allowedSources: [String] = [], allowsPrivateAddresses: Bool = false) {
        self.allowedSources = allowedSources
        self.allowsPrivateAddresses = allowsPrivateAddresses
    }

    /// The URL of `source` when the allow-list lets it be fetched. Cheap: a cached answer needs only this.
    /// - Throws: ``ServiceError/badRequest(_:)`` for a URL without a host, ``ServiceError/forbidden(_:)`` for a
    ///   source off the list.
    func allowedURL(_ source: String) throws(ServiceError) -> URL {
        guard let url = URL(string: source), let host = url.host?.lowercased(), !host.isEmpty,
              url.scheme == "http" || url.scheme == "https"
        else { throw .badRequest("the source is not an http(s) URL with a host") }
        guard isListed(url, host: host) else { throw .forbidden("source host \(host) is not allowed") }
        return url
    }

    /// Resolves `url`'s host and checks every address, before a download.
    /// - Throws: ``ServiceError/forbidden(_:)`` for a refused address, ``ServiceError/badGateway(_:)`` when the
    ///   name does not resolve.
    func checkAddresses(of url: URL) async throws(ServiceError) {
        guard !allowsPrivateAddresses, let host = url.host?.lowercased() else { return }
        let addresses = await Self.resolve(host)
        guard !addresses.isEmpty else { throw .badGateway("cannot resolve \(host)") }
        if let refused = addresses.first(where: { !$0.isPublic }) {
            throw .forbidden("source \(host) resolves to a non-public address \(refused)")
        }
    }

    /// Both checks: the URL to fetch.
    func check(_ source: String) async throws(ServiceError) -> URL {
        let url = try allowedURL(source)
        try await checkAddresses(of: url)
        return url
    }

    private func isListed(_ url: URL, host: String) -> Bool {
        guard !allowedSources.isEmpty else { return true }
        let port = url.port ?? (url.scheme == "https" ? 443 : 80)
        let absolute = url.absoluteString
        return allowedSources.contains { entry in
            let entry = entry.lowercased()
            if entry.hasPrefix("http://") || entry.hasPrefix("https://") { return absolute.lowercased().hasPrefix(entry) }
            var name = Substring(entry)
            if let colon = entry.lastIndex(of: ":"), let requiredPort = Int(entry[entry.index(after: colon)...]),
               entry[..<colon].firstIndex(of: ":") == nil || entry[..<colon].hasSuffix("]") {
                guard requiredPort == port else { return false }
                name = entry[..<colon]
            }
            if name.hasPrefix("*.") { return host.hasSuffix(name.dropFirst()) }
            return Self.unbracketed(host) == Self.unbracketed(name)
        }
    }

    private static func unbracketed(_ host: some StringProtocol) -> Substring {
        let host = Substring(host)
        return host.hasPrefix("[") && host.hasSuffix("]") ? host.dropFirst().dropLast() : host
    }

    /// Every address `host` resolves to (a literal address resolves to itself).
    static func resolve(_ host: String) async -> [SourceAddress] {
        let name = String(unbracketed(host))
        return await withCheckedContinuation { continuation in
            // getaddrinfo blocks: it runs on a thread of its own, not on the caller's executor.
            DispatchQueue.global().async {
                continuation.resume(returning: resolveBlocking(name))
            }
        }
    }

    private static func resolveBlocking(_ host: String) -> [SourceAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [SourceAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let address = current.pointee.ai_addr {
                switch Int32(current.pointee.ai_family) {
                case AF_INET:
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { inet in
                        addresses.append(.v4(UInt32(bigEndian: inet.pointee.sin_addr.s_addr)))
                    }
                case AF_INET6:
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { inet6 in
                        addresses.append(.v6(withUnsafeBytes(of: inet6.pointee.sin6_addr) { Array($0) }))
                    }
                default: break
                }
            }
            entry = current.pointee.ai_next
        }
        return addresses
    }
}

/// An address a source host resolved to.
enum SourceAddress: Equatable, CustomStringConvertible {
    case v4(UInt32)
    case v6([UInt8])

    /// Not loopback, unspecified, private, shared (carrier-grade NAT), link-local, multicast, documentation or
    /// reserved.
    var isPublic: Bool {
        switch self {
        case .v4(let address):
            let refused: [(UInt32, Int)] = [
                (0x0000_0000, 8), (0x0A00_0000, 8), (0x6440_0000, 10), (0x7F00_0000, 8), (0xA9FE_0000, 16),
                (0xAC10_0000, 12), (0xC000_0000, 24), (0xC000_0200, 24), (0xC0A8_0000, 16), (0xC612_0000, 15),
                (0xC633_6400, 24), (0xCB00_7100, 24), (0xE000_0000, 4), (0xF000_0000, 4),
            ]
            return !refused.contains { network, bits in address >> (32 - bits) == network >> (32 - bits) }
        case .v6(let bytes):
            guard bytes.count == 16 else { return false }
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
                return SourceAddress.v4(bytes[12..<16].reduce(0) { $0 << 8 | UInt32($1) }).isPublic   // IPv4-mapped
            }
            if bytes[0..<15].allSatisfy({ $0 == 0 }) { return false }             // :: and ::1
            if bytes[0] == 0xFF { return false }                                  // multicast
            if bytes[0] & 0xFE == 0xFC { return false }                           // unique-local fc00::/7
            if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return false }       // link-local fe80::/10
            if bytes[0] == 0x20 && bytes[1] == 0x01 && bytes[2] == 0x0D && bytes[3] == 0xB8 { return false }  // documentation
            return true
        }
    }

    var description: String {
        switch self {
        case .v4(let address):
            return [24, 16, 8, 0].map { String(address >> UInt32($0) & 0xFF) }.joined(separator: ".")
        case .v6(let bytes):
            return stride(from: 0, to: bytes.count, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
                .joined(separator: ":")
        }
    }
}
