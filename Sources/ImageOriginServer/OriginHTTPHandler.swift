import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// One connection's HTTP/1.1 exchanges: reads a request, plans its response, then writes the head and the
/// body in chunks — timed for shaping and the shared link, paused while the channel is not writable, cut
/// short by faults.
///
/// Sits after NIO's HTTP server pipeline (with pipelining assistance, so a kept-alive connection is
/// offered its next request only once the previous response has ended). Not `Sendable`: NIO calls a
/// handler on its channel's event loop only, and every timer and future callback here is isolated to that
/// loop (`assumeIsolated()`), so its state needs no lock.
final class OriginHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Unshaped bodies go out in writes of this size (NIO's default high water mark is 64 KiB).
    static let chunkSize = 32 * 1024
    /// Bytes written in one event-loop turn before yielding, so one fast body cannot starve other connections.
    static let bytesPerTurn = 1024 * 1024
    /// The shaping tick.
    static let tick = TimeAmount.milliseconds(10)

    /// What `bytesPerSecond` earns in one tick (at least a byte).
    static func bytesPerTick(_ bytesPerSecond: Int) -> Int {
        max(Int(Double(bytesPerSecond) * Double(tick.nanoseconds) / 1e9), 1)
    }

    private let routes: OriginRoutes
    private let log: OriginRequestLog
    private let directory: OriginDirectory?
    private let connections: OriginConnections
    private let connectionID: Int
    private let downlink: OriginDownlink
    /// When the connection was accepted: a link's handshake round trips are counted from here.
    private let acceptedAt: NIODeadline
    /// Responses begun on this connection so far; the first one pays the link's handshake.
    private var responsesBegun = 0

    private var requestHead: HTTPRequestHead?
    private var exchange: OriginExchange?
    private var isPumping = false
    private var isActive = true
    /// Set when the server itself ends the connection (a fault, `Connection: close`), so its closing is not
    /// taken for the client going away.
    private var closingOnPurpose = false

    init(routes: OriginRoutes, log: OriginRequestLog, directory: OriginDirectory?,
         connections: OriginConnections, connectionID: Int, downlink: OriginDownlink, acceptedAt: NIODeadline) {
        self.routes = routes
        self.log = log
        self.directory = directory
        self.connections = connections
        self.connectionID = connectionID
        self.downlink = downlink
        self.acceptedAt = acceptedAt
    }

    // MARK: Channel events

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            requestHead = head
        case .body:
            break  // request bodies are read and dropped: only GET and HEAD are served
        case .end:
            guard let head = requestHead else { return }
            requestHead = nil
            _eventLoop_startExchange(context: context, head: head)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { _eventLoop_pump(context: context) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        isActive = false
        if let exchange, !exchange.isComplete {
            exchange.cancelTimers()
            let byServer = closingOnPurpose || connections.isShuttingDown
            _eventLoop_complete(exchange, clientWentAway: !byServer)
        }
        exchange = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A write to a client that has gone (EPIPE, ECONNRESET) or a request NIO could not parse (its error
        // handler has already answered 400): nothing more can be said on this connection.
        context.close(promise: nil)
    }

    // MARK: Planning

    // Runs on the channel's event loop.
    private func _eventLoop_startExchange(context: ChannelHandlerContext, head: HTTPRequestHead) {
        let target = OriginRequestTarget.parse(head.uri)
        let rawPath: String
        let query: String?
        switch target {
        case .success(let parsed): (rawPath, query) = (parsed.rawPath, parsed.query)
        case .failure:
            let mark = head.uri.firstIndex(of: "?")
            rawPath = mark.map { String(head.uri[..<$0]) } ?? head.uri
            query = mark.map { String(head.uri[head.uri.index(after: $0)...]) }
        }
        let sequence = log.begin(connection: connectionID, method: head.method.rawValue, path: rawPath, query: query,
                                 headers: head.headers.map { (name: $0.name, value: $0.value) })
        let exchange = OriginExchange(sequence: sequence, receivedAt: .now())
        self.exchange = exchange
        let request = OriginResponsePlan.Request(method: head.method, version: head.version, headers: head.headers,
                                                 keepAlive: head.isKeepAlive)

        guard case .success(let parsed) = target else {
            let plan = OriginResponsePlan.message(.badRequest, "bad request target\n", for: request,
                                                  shaping: routes.shaping(path: "", query: nil))
            _eventLoop_begin(exchange, plan: plan, context: context)
            return
        }
        guard head.method == .GET || head.method == .HEAD else {
            let plan = OriginResponsePlan.make(for: request, asset: nil, faults: OriginFaultSet(),
                                               shaping: routes.shaping(path: parsed.path, query: parsed.query))
            _eventLoop_begin(exchange, plan: plan, context: context)
            return
        }
        var snapshot = routes.snapshot(path: parsed.path, query: parsed.query)
        if snapshot.asset == nil {
            snapshot.asset = routes.variants.asset(path: parsed.path, query: parsed.query, accept: head.headers.first(name: "Accept"))
        }
        let needsFile = snapshot.asset == nil && snapshot.faults.statusOverride == nil
            && snapshot.faults.redirectLocation == nil
        guard needsFile, let directory else {
            let plan = OriginResponsePlan.make(for: request, asset: snapshot.asset, faults: snapshot.faults,
                                               shaping: snapshot.shaping)
            _eventLoop_begin(exchange, plan: plan, context: context)
            return
        }
        // Reading and hashing a file is blocking work: off the event loop, then back to it.
        let segments = parsed.segments
        NIOThreadPool.singleton.runIfActive(eventLoop: context.eventLoop) {
            directory.asset(for: segments)
        }.assumeIsolated().whenComplete { result in
            let asset = (try? result.get()) ?? nil
            let plan = OriginResponsePlan.make(for: request, asset: asset, faults: snapshot.faults,
                                               shaping: snapshot.shaping)
            self._eventLoop_begin(exchange, plan: plan, context: context)
        }
    }

    // Runs on the channel's event loop: sends the head now or once the link's round trips and the route's
    // first-byte latency have passed.
    private func _eventLoop_begin(_ exchange: OriginExchange, plan: OriginResponsePlan, context: ChannelHandlerContext) {
        guard isActive, self.exchange === exchange, !exchange.isComplete else { return }
        exchange.plan = plan
        log.setStatus(Int(plan.status.code), for: exchange.sequence)
        let timing = OriginResponseTiming(plan: plan, link: downlink.link, receivedAt: exchange.receivedAt,
                                          acceptedAt: acceptedAt, connection: connectionID, response: responsesBegun)
        responsesBegun += 1
        exchange.stallOffset = timing.stallOffset
        exchange.stallDuration = timing.stallDuration
        let deadline = timing.headDeadline
        if deadline > .now() {
            exchange.pendingHead = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
                exchange.pendingHead = nil
                self._eventLoop_sendHead(exchange, context: context)
            }
        } else {
            _eventLoop_sendHead(exchange, context: context)
        }
    }

    // MARK: Writing

    // Runs on the channel's event loop.
    private func _eventLoop_sendHead(_ exchange: OriginExchange, context: ChannelHandlerContext) {
        guard isActive, self.exchange === exchange, let plan = exchange.plan else { return }
        let head = HTTPResponseHead(version: plan.version, status: plan.status, headers: plan.headers)
        let promise = context.eventLoop.makePromise(of: Void.self)
        context.write(wrapOutboundOut(.head(head)), promise: promise)
        exchange.lastWrite = promise.futureResult
        exchange.headSent = true
        exchange.nextOffset = plan.bodyRange.lowerBound
        exchange.refilledAt = .now()
        if downlink.link != nil, plan.hasBody(after: exchange.nextOffset) { exchange.flow = downlink.join() }
        _eventLoop_pump(context: context)
    }

    /// Writes body chunks while the channel is writable and shaping allows, then ends the body.
    /// Re-entered from writability changes, shaping ticks and its own yields; `isPumping` keeps a write's
    /// synchronous callbacks from nesting a second pump inside the first.
    // Runs on the channel's event loop.
    private func _eventLoop_pump(context: ChannelHandlerContext) {
        guard !isPumping, isActive, let exchange, exchange.headSent, !exchange.bodyEnded,
              let plan = exchange.plan
        else { return }
        isPumping = true
        let bodyDone = _eventLoop_writeAllowedChunks(exchange, plan: plan, context: context)
        isPumping = false
        // Ending the body writes `.end`, during which NIO's pipelining handler may hand over the next request
        // and start its response: that must find the pump free.
        if bodyDone { _eventLoop_endBody(exchange, plan: plan, context: context) }
    }

    /// Writes what writability, shaping and fairness allow; `true` once the whole planned body is written.
    // Runs on the channel's event loop.
    private func _eventLoop_writeAllowedChunks(_ exchange: OriginExchange, plan: OriginResponsePlan,
                                               context: ChannelHandlerContext) -> Bool {
        var writtenThisTurn = 0
        while plan.hasBody(after: exchange.nextOffset) {
            guard !exchange.isStalled else { return false }  // the stall's timer resumes
            if !context.channel.isWritable {
                // The flush may drain below the low water mark at once; that writability change arrives while
                // `isPumping` is set and is ignored, so look again rather than wait for it.
                context.flush()
                guard context.channel.isWritable else { return false }  // channelWritabilityChanged resumes
            }
            guard writtenThisTurn < Self.bytesPerTurn else {
                context.flush()
                context.eventLoop.assumeIsolated().execute { self._eventLoop_pump(context: context) }
                return false
            }
            var count = min(plan.source(at: exchange.nextOffset).available, Self.chunkSize)
            if let stallOffset = exchange.stallOffset {
                if stallOffset == exchange.nextOffset {
                    context.flush()
                    _eventLoop_stall(exchange, context: context)
                    return false
                }
                count = min(count, stallOffset - exchange.nextOffset)
            }
            // Wait for a tick's worth of credit (or the rest of the body) rather than dribbling out the few
            // bytes earned while this loop ran: a shaped body goes out in tick-sized chunks, not in thousands
            // of tiny ones that cost the client a callback each.
            var need = count
            if let rate = plan.shaping.bytesPerSecond {
                let now = NIODeadline.now()
                let elapsed = Double((now - exchange.refilledAt).nanoseconds) / 1e9
                // At most 100 ms of credit: a client that stopped reading does not earn a burst.
                exchange.credit = min(exchange.credit + Double(rate) * elapsed, max(Double(rate) / 10, 1))
                exchange.refilledAt = now
                count = min(count, Int(exchange.credit))
                need = min(need, Self.bytesPerTick(rate))
            }
            if let flow = exchange.flow {
                // The response's own cap first, then its share of the link: it obeys both.
                count = downlink.take(flow, upTo: count, atLeast: need)
            } else if count < need {
                count = 0
            }
            guard count > 0 else {
                context.flush()
                _eventLoop_scheduleTick(exchange, context: context)
                return false
            }
            if plan.shaping.bytesPerSecond != nil { exchange.credit -= Double(count) }
            _eventLoop_writeBody(exchange, plan: plan, count: count, context: context)
            writtenThisTurn += count
        }
        context.flush()
        return true
    }

    // Runs on the channel's event loop.
    private func _eventLoop_scheduleTick(_ exchange: OriginExchange, context: ChannelHandlerContext) {
        guard exchange.pendingTick == nil else { return }
        exchange.pendingTick = context.eventLoop.assumeIsolated().scheduleTask(in: Self.tick) {
            exchange.pendingTick = nil
            self._eventLoop_pump(context: context)
        }
    }

    /// The link's loss-like stall: the body pauses once, off the link so the other responses share it
    /// meanwhile, and resumes after the link's stall duration.
    // Runs on the channel's event loop.
    private func _eventLoop_stall(_ exchange: OriginExchange, context: ChannelHandlerContext) {
        exchange.stallOffset = nil
        exchange.isStalled = true
        if let flow = exchange.flow { downlink.leave(flow) }
        exchange.flow = nil
        exchange.pendingTick?.cancel()
        exchange.pendingTick = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(exchange.stallDuration)) {
            exchange.pendingTick = nil
            exchange.isStalled = false
            guard self.isActive, self.exchange === exchange, !exchange.isComplete else { return }
            if self.downlink.link != nil { exchange.flow = self.downlink.join() }
            self._eventLoop_pump(context: context)
        }
    }

    // Runs on the channel's event loop.
    private func _eventLoop_writeBody(_ exchange: OriginExchange, plan: OriginResponsePlan, count: Int,
                                      context: ChannelHandlerContext) {
        let start = plan.source(at: exchange.nextOffset).start
        var buffer = context.channel.allocator.buffer(capacity: count)
        plan.body.withUnsafeBytes { raw in
            _ = buffer.writeBytes(UnsafeRawBufferPointer(rebasing: raw[start..<(start + count)]))
        }
        exchange.nextOffset += count
        exchange.peakQueued = max(exchange.peakQueued, exchange.nextOffset - plan.bodyRange.lowerBound - exchange.confirmedBytes)
        let promise = context.eventLoop.makePromise(of: Void.self)
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: promise)
        exchange.lastWrite = promise.futureResult
        promise.futureResult.assumeIsolated().whenSuccess {
            exchange.confirmedBytes += count
            if !exchange.isComplete {
                self.log.setBytesSent(exchange.confirmedBytes, peakQueued: exchange.peakQueued, for: exchange.sequence)
            }
        }
    }

    /// The body has gone out (or as much of it as a fault allows): finish, close, reset or stall.
    // Runs on the channel's event loop.
    private func _eventLoop_endBody(_ exchange: OriginExchange, plan: OriginResponsePlan, context: ChannelHandlerContext) {
        exchange.bodyEnded = true
        _eventLoop_leaveLink(exchange)
        switch plan.ending {
        case .finish(let thenClose):
            // The pipelining handler may hand over the next request while `.end` is being written, so this
            // exchange stops being the connection's current one first.
            self.exchange = nil
            if thenClose { closingOnPurpose = true }
            let promise = context.eventLoop.makePromise(of: Void.self)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: promise)
            promise.futureResult.assumeIsolated().whenComplete { result in
                let expected = plan.bodyRange.count
                if case .failure = result {
                    self._eventLoop_complete(exchange, clientWentAway: exchange.confirmedBytes < expected)
                } else {
                    self._eventLoop_complete(exchange, clientWentAway: false)
                }
                if thenClose { context.close(promise: nil) }
            }
        case .close, .reset:
            let ending = plan.ending
            let last = exchange.lastWrite ?? context.eventLoop.makeSucceededVoidFuture()
            last.assumeIsolated().whenComplete { result in
                guard case .success = result, self.isActive else { return }  // channelInactive completes it
                self.closingOnPurpose = true
                self._eventLoop_complete(exchange, clientWentAway: false)
                if ending == .reset, let provider = context.channel as? any SocketOptionProvider {
                    // SO_LINGER with a zero timeout makes close() send RST instead of FIN.
                    provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).assumeIsolated().whenComplete { _ in
                        context.close(promise: nil)
                    }
                } else {
                    context.close(promise: nil)
                }
            }
        case .stall:
            break  // completed by channelInactive: the client leaves or the server shuts down
        }
    }

    // Runs on the channel's event loop.
    private func _eventLoop_complete(_ exchange: OriginExchange, clientWentAway: Bool) {
        guard !exchange.isComplete else { return }
        exchange.isComplete = true
        exchange.cancelTimers()
        _eventLoop_leaveLink(exchange)
        log.complete(exchange.sequence, bytesSent: exchange.confirmedBytes, peakQueued: exchange.peakQueued,
                     clientWentAway: clientWentAway)
    }

    // Runs on the channel's event loop.
    private func _eventLoop_leaveLink(_ exchange: OriginExchange) {
        if let flow = exchange.flow { downlink.leave(flow) }
        exchange.flow = nil
    }
}
