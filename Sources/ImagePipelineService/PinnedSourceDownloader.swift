import Foundation
import ImagePipelineKit
import PipelineLocking
#if canImport(Glibc)
import Glibc
#endif

/// The service's downloader: it resolves a source's host name itself, refuses the download when an address is
/// one the source policy refuses, and connects a plain `http` download to the address it checked, with the
/// name in `Host`. A name that resolves to a public address when the request is checked and to a private one a
/// moment later (DNS rebinding) is then refused at the download, or never reached.
///
/// An `https` download is checked the same way but keeps its name in the URL, for the certificate check: the
/// transport resolves the name again, and a rebound address would have to present a certificate for that name.
/// A source given as an address needs no resolving and goes straight to the transport.
final class PinnedSourceDownloader: ImageDownloader {
    private let transport: any ImageDownloader
    private let allowsPrivateAddresses: Bool
    private let resolve: @Sendable (String) async -> [SourceAddress]

    /// Downloads through `transport`; `resolve` is the resolver (the system's unless a test gives one).
    init(transport: any ImageDownloader, allowsPrivateAddresses: Bool,
         resolve: @escaping @Sendable (String) async -> [SourceAddress] = SourcePolicy.resolve) {
        self.transport = transport
        self.allowsPrivateAddresses = allowsPrivateAddresses
        self.resolve = resolve
    }

    func startDownload(_ request: DownloadRequest, delegate: any ImageDownloadDelegate) -> any ImageDownloadTask {
        // An address needs no resolving; nor does an `https` name when private addresses are allowed: it is
        // neither checked nor pinned.
        guard let host = request.url.host, !host.isEmpty, SourceAddress(literal: host) == nil,
              request.url.scheme == "http" || !allowsPrivateAddresses else {
            return transport.startDownload(request, delegate: delegate)
        }
        let task = PinnedDownloadTask(request: request, delegate: delegate)
        Task {
            switch await pinned(request, host: host) {
            case .success(let pinned): task.start { self.transport.startDownload(pinned, delegate: delegate) }
            case .failure(let error): task.fail(error)
            }
        }
        return task
    }

    /// `request` sent to an address of `host` that the policy allows: the first IPv4 one in place of the name of
    /// a plain `http` URL, or the URL as it was.
    private func pinned(_ request: DownloadRequest, host: String) async -> Result<DownloadRequest, DownloadError> {
        let addresses = await resolve(host)
        guard let first = addresses.first(where: \.isIPv4) ?? addresses.first else {
            return .failure(.transport(description: "cannot resolve \(host)"))
        }
        if !allowsPrivateAddresses, let refused = addresses.first(where: { !$0.isPublic }) {
            return .failure(.transport(description: "\(host) now resolves to a non-public address \(refused)"))
        }
        guard request.url.scheme == "http", first.isIPv4,
              var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false) else { return .success(request) }
        components.host = first.description
        guard let url = components.url else { return .success(request) }
        var pinned = request
        pinned.url = url
        pinned.headers.replaceOrAdd(name: "Host", value: request.url.port.map { "\(host):\($0)" } ?? host)
        return .success(pinned)
    }
}

/// A download waiting for its host name to be resolved, then the transport's download. It completes exactly
/// once: cancelled before the transport started, refused, or as the transport's task completes.
private final class PinnedDownloadTask: ImageDownloadTask {
    let request: DownloadRequest
    private let delegate: any ImageDownloadDelegate
    private let state: Locked<State>

    private struct State {
        var priority: Operation.QueuePriority
        var transportTask: (any ImageDownloadTask)?
        /// Cancelled or refused before the transport started: the completion was sent.
        var ended = false
        /// The transport's download is being started: a cancel now waits for it, and its completion is the one.
        var starting = false
        var cancelRequested = false
    }

    init(request: DownloadRequest, delegate: any ImageDownloadDelegate) {
        self.request = request
        self.delegate = delegate
        state = Locked(State(priority: request.priority))
    }

    var priority: Operation.QueuePriority {
        get { state.withLock { $0.priority } }
        set {
            let running = state.withLock { state in
                state.priority = newValue
                return state.transportTask
            }
            running?.priority = newValue
        }
    }

    func cancel() {
        let (running, endsHere) = state.withLock { state -> ((any ImageDownloadTask)?, Bool) in
            if let task = state.transportTask { return (task, false) }
            if state.ended { return (nil, false) }
            if state.starting {
                state.cancelRequested = true
                return (nil, false)
            }
            state.ended = true
            return (nil, true)
        }
        running?.cancel()
        // Never on the caller's thread: whoever cancels may hold locks that the delegate's completion needs.
        if endsHere { DispatchQueue.global().async { self.delegate.download(self, didCompleteWith: .cancelled) } }
    }

    /// Starts the transport's download unless this one was cancelled meanwhile.
    func start(_ startTransport: () -> any ImageDownloadTask) {
        let starts = state.withLock { state -> Bool in
            guard !state.ended else { return false }
            state.starting = true
            return true
        }
        guard starts else { return }
        let task = startTransport()
        let (cancelled, priority) = state.withLock { state -> (Bool, Operation.QueuePriority) in
            state.transportTask = task
            return (state.cancelRequested, state.priority)
        }
        if cancelled { task.cancel() } else if priority != request.priority { task.priority = priority }
    }

    /// Ends the download with `error` unless it was cancelled first.
    func fail(_ error: DownloadError) {
        let endsHere = state.withLock { state -> Bool in
            guard !state.ended else { return false }
            state.ended = true
            return true
        }
        if endsHere { delegate.download(self, didCompleteWith: error) }
    }
}

extension SourceAddress {
    /// The address `host` writes literally (`203.0.113.7`, `[2001:db8::1]` or `2001:db8::1`), or `nil` for a name.
    init?(literal host: String) {
        var name = Substring(host)
        if name.hasPrefix("["), name.hasSuffix("]") { name = name.dropFirst().dropLast() }
        var v4 = in_addr()
        if inet_pton(AF_INET, String(name), &v4) == 1 {
            self = .v4(UInt32(bigEndian: v4.s_addr))
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, String(name), &v6) == 1 {
            self = .v6(withUnsafeBytes(of: v6) { Array($0) })
            return
        }
        return nil
    }

    var isIPv4: Bool {
        if case .v4 = self { return true }
        return false
    }
}
