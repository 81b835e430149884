import NIOCore
import NIOHPACK
import NIOHTTP2
import Synchronization

/// One request for ``HTTP2Connection/send(_:timeout:)``, ready for the wire.
public struct HTTP2Request: Sendable {
    /// The request headers, pseudo-headers (`:method`, `:scheme`, `:authority`, `:path`) first, names lowercased.
    public var headers: HPACKHeaders
    /// The body.
    public var body: ByteBuffer

    /// Creates a request.
    public init(headers: HPACKHeaders, body: ByteBuffer) {
        self.headers = headers
        self.body = body
    }
}

/// The answer to one request, or why there was none.
public struct HTTP2Response: Sendable {
    /// The HTTP status, or 0 when no answer came (``failure`` says why).
    public var status: Int
    /// The response headers (without `:status`).
    public var headers: HPACKHeaders
    /// The body, kept up to the connection's bound (``HTTP2ConnectionPool/Settings/maximumBodyBytes``); `nil` when
    /// empty.
    public var body: ByteBuffer?
    /// Why no answer came: `ConnectionClosed`, `GoAway`, `Refused`, `StreamReset`, `Timeout`, `ConnectFailed`, or
    /// ``notSent``.
    public var failure: String?

    /// Creates a response.
    public init(status: Int, headers: HPACKHeaders = [:], body: ByteBuffer? = nil, failure: String? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.failure = failure
    }

    /// No answer, for `why`.
    public static func failed(_ why: String) -> HTTP2Response { HTTP2Response(status: 0, failure: why) }

    /// The request never left the hub (the connection went away first).
    public static let notSent = "NotSent"

    /// Whether the server certainly did not process the request (never sent, refused, or above GOAWAY's last stream
    /// id), so it can be sent again at once on another connection.
    public var isUnprocessed: Bool {
        status == 0 && (failure == Self.notSent || failure == "GoAway" || failure == "Refused")
    }
}

/// The requests of one ``HTTP2Connection/send(_:timeout:)`` call and their answers so far.
/// Confined to the connection's event loop.
final class HTTP2ClientBatch {
    var responses: [HTTP2Response?]
    var remaining: Int
    let promise: EventLoopPromise<[HTTP2Response]>
    /// The batch's deadline, cancelled when its last answer comes: a pending deadline holds the batch (and its
    /// answers) in the event loop's schedule until it fires.
    var deadline: Scheduled<Void>?

    init(count: Int, promise: EventLoopPromise<[HTTP2Response]>) {
        self.responses = Array(repeating: nil, count: count)
        self.remaining = count
        self.promise = promise
    }

    func complete(_ index: Int, _ response: HTTP2Response) {
        guard responses[index] == nil else { return }
        responses[index] = response
        remaining -= 1
        if remaining == 0 {
            deadline?.cancel()
            deadline = nil
            promise.succeed(responses.map { $0! })
        }
    }

    func failRemaining(_ why: String) {
        for index in responses.indices where responses[index] == nil { complete(index, .failed(why)) }
    }
}

/// Flags of a connection that other threads read.
public final class HTTP2ConnectionStatus: Sendable {
    /// False once the connection got GOAWAY, closed, or failed a keep-alive PING: the pool replaces it.
    public let usable = Atomic<Bool>(true)
    /// The server's current `SETTINGS_MAX_CONCURRENT_STREAMS` (0 until its first SETTINGS).
    public let remoteMaximumStreams = Atomic<Int>(0)
    /// The most streams this connection had open at once.
    public let peakStreams = Atomic<Int>(0)
    /// Keep-alive PINGs the server acknowledged.
    public let pingsAcknowledged = Atomic<Int>(0)

    /// Creates the flags of a new connection.
    public init() {}
}

/// Drives requests over one HTTP/2 connection at frame level: allocates stream ids, keeps at most
/// min(server's `SETTINGS_MAX_CONCURRENT_STREAMS`, configured maximum) streams open and queues the rest, matches
/// answers to requests, sends keep-alive PINGs, and fails what is left when the server sends GOAWAY or the
/// connection closes.
///
/// Confined to its channel's event loop.
final class HTTP2ClientHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct Pending {
        var batch: HTTP2ClientBatch
        var index: Int
        var request: HTTP2Request
    }

    private struct InFlight {
        var batch: HTTP2ClientBatch
        var index: Int
        var response = HTTP2Response(status: 0)
    }

    private let maximumStreams: Int
    private let pingInterval: TimeAmount
    private let pingTimeout: TimeAmount
    private var keepAlive: HTTP2KeepAlive?
    let status: HTTP2ConnectionStatus
    /// Bytes of a response body kept; the rest is read and dropped.
    private let maximumBodyBytes: Int
    private var context: ChannelHandlerContext?
    // Assume one stream until the server's SETTINGS arrive (APNs allows one until the first authenticated request).
    private var remoteMaximumStreams = 1
    private var nextStreamID = HTTP2StreamID(1)
    private var queue = CircularBuffer<Pending>(initialCapacity: 64)
    private var inFlight: [HTTP2StreamID: InFlight] = [:]
    private var closed = false
    private var receivedSettings = false
    private var reading = false
    private var needsFlush = false
    /// Response bytes consumed since the last connection WINDOW_UPDATE.
    private var consumedBytes = 0
    private var pingTask: Scheduled<Void>?

    /// The write-gathering handler between TLS and HTTP/2, if the pipeline has one.
    private let coalescer: WriteCoalescingHandler?

    init(
        maximumStreams: Int, pingInterval: TimeAmount, pingTimeout: TimeAmount, status: HTTP2ConnectionStatus,
        coalescer: WriteCoalescingHandler? = nil, maximumBodyBytes: Int = 4096
    ) {
        self.maximumBodyBytes = maximumBodyBytes
        self.maximumStreams = maximumStreams
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
        self.status = status
        self.coalescer = coalescer
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard pingTask == nil, !closed else { return }
        // A large connection window so hundreds of answers in flight do not stall.
        context.writeAndFlush(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: 16 << 20))),
            promise: nil)
        schedulePing(context: context)
    }

    private func schedulePing(context: ChannelHandlerContext) {
        let loop = context.eventLoop
        if keepAlive == nil { keepAlive = HTTP2KeepAlive(interval: pingInterval, timeout: pingTimeout, now: loop.now) }
        guard let due = keepAlive?.nextTick else { return }
        pingTask = loop.assumeIsolated().scheduleTask(deadline: due) { [weak self] in
            guard let self, !self.closed, let action = self.keepAlive?.tick(now: loop.now) else { return }
            self.ping(action)
            if !self.closed { self.schedulePing(context: context) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        shutDown("ConnectionClosed")
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        shutDown("ConnectionClosed")
        context.close(promise: nil)
    }

    private func shutDown(_ why: String) {
        closed = true
        status.usable.store(false, ordering: .relaxed)
        pingTask?.cancel()
        pingTask = nil
        let flying = inFlight
        inFlight.removeAll()
        for (_, request) in flying { request.batch.complete(request.index, .failed(why)) }
        while let pending = queue.popFirst() { pending.batch.complete(pending.index, .failed(HTTP2Response.notSent)) }
    }

    private func ping(_ action: HTTP2KeepAlive.Action) {
        guard let context, !closed else { return }
        switch action {
        case .wait:
            break
        case .closeConnection:
            // The PING was not acknowledged in time: the connection is dead.
            shutDown("ConnectionClosed")
            context.close(promise: nil)
        case .sendPing:
            context.writeAndFlush(
                wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(), ack: false))), promise: nil)
        }
    }

    /// Queues requests and opens as many streams as allowed.
    func submit(_ requests: [HTTP2Request], batch: HTTP2ClientBatch, timeout: TimeAmount) {
        guard !closed, status.usable.load(ordering: .relaxed), let context else {
            batch.failRemaining(HTTP2Response.notSent)
            return
        }
        for (index, request) in requests.enumerated() { queue.append(Pending(batch: batch, index: index, request: request)) }
        batch.deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [weak self, weak batch] in
            guard let batch, batch.remaining > 0 else { return }
            self?.cancel(batch)
            batch.failRemaining("Timeout")
        }
        drain()
    }

    private func cancel(_ batch: HTTP2ClientBatch) {
        guard let context else { return }
        for (streamID, request) in inFlight where request.batch === batch {
            inFlight.removeValue(forKey: streamID)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
        }
        queue.removeAll { $0.batch === batch }
        context.flush()
        drain()
    }

    private func drain() {
        guard let context, !closed else { return }
        let limit = min(remoteMaximumStreams, maximumStreams)
        var wrote = false
        // swift-nio-http2 sends the DATA frames of one flush in no particular order, and a stream that ends out of
        // order costs both ends a shift of every younger stream's state. A flush per request keeps them in order;
        // the coalescer holds those flushes and writes the requests to the network as one.
        coalescer?.holdsFlushes = true
        while inFlight.count < limit, let pending = queue.popFirst() {
            let streamID = nextStreamID
            nextStreamID = nextStreamID.advanced(by: 2)
            inFlight[streamID] = InFlight(batch: pending.batch, index: pending.index)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: pending.request.headers, endStream: false)))),
                promise: nil)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(pending.request.body), endStream: true)))),
                promise: nil)
            if coalescer != nil { context.flush() }
            wrote = true
        }
        coalescer?.holdsFlushes = false
        if wrote {
            // While reading, one flush at the end of the read batch covers every request written.
            if reading { needsFlush = true } else { flush(context: context) }
            if inFlight.count > status.peakStreams.load(ordering: .relaxed) { status.peakStreams.store(inFlight.count, ordering: .relaxed) }
        }
    }

    /// Flushes what was written, and what the coalescer held.
    private func flush(context: ChannelHandlerContext) {
        context.flush()
        coalescer?.flushIfPending()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        reading = false
        if needsFlush {
            needsFlush = false
            flush(context: context)
        }
        context.fireChannelReadComplete()
    }

    /// Gives consumed response bytes back to the server's connection-level send window once they add up to a
    /// megabyte; without it the window granted at start runs out after that many bytes of error bodies and the
    /// connection stalls. Stream windows need no update: every stream ends long before its own window.
    private func returnToConnectionWindow(_ bytes: Int, context: ChannelHandlerContext) {
        consumedBytes += bytes
        guard consumedBytes >= 1 << 20 else { return }
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: consumedBytes))),
            promise: nil)
        consumedBytes = 0
        needsFlush = true
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reading = true
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            guard var request = inFlight[frame.streamID] else { return }
            // The first HEADERS frame is the answer's head; a later one (trailers) is not read.
            if request.response.status == 0 {
                for (name, value, indexing) in headers.headers {
                    if name == ":status" {
                        request.response.status = Int(value) ?? 0
                    } else if !name.hasPrefix(":") {
                        request.response.headers.add(name: name, value: value, indexing: indexing)
                    }
                }
            }
            if headers.endStream {
                finish(frame.streamID, request)
            } else {
                inFlight[frame.streamID] = request
            }
        case .data(let data):
            returnToConnectionWindow(data.data.readableBytes + (data.paddingBytes ?? 0), context: context)
            guard var request = inFlight[frame.streamID] else { return }
            let kept = request.response.body?.readableBytes ?? 0
            if case .byteBuffer(var buffer) = data.data, buffer.readableBytes > 0, kept < maximumBodyBytes {
                var part = buffer.readSlice(length: min(buffer.readableBytes, maximumBodyBytes - kept)) ?? ByteBuffer()
                if request.response.body == nil { request.response.body = part } else { request.response.body!.writeBuffer(&part) }
            }
            if data.endStream {
                finish(frame.streamID, request)
            } else {
                inFlight[frame.streamID] = request
            }
        case .settings(.settings(let settings)):
            if !receivedSettings {
                // The first SETTINGS without a limit means "unlimited" (RFC 9113 §6.5.2).
                receivedSettings = true
                remoteMaximumStreams = Int.max
                status.remoteMaximumStreams.store(Int.max, ordering: .relaxed)
            }
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                remoteMaximumStreams = setting.value
                status.remoteMaximumStreams.store(setting.value, ordering: .relaxed)
            }
            drain()
        case .ping(_, ack: true):
            keepAlive?.acknowledged()
            status.pingsAcknowledged.add(1, ordering: .relaxed)
        case .goAway(let lastStreamID, _, _):
            // Streams above lastStreamID were not processed: fail them (retryable); the rest may still finish.
            status.usable.store(false, ordering: .relaxed)
            for (streamID, request) in inFlight where streamID > lastStreamID {
                inFlight.removeValue(forKey: streamID)
                request.batch.complete(request.index, .failed("GoAway"))
            }
            while let pending = queue.popFirst() { pending.batch.complete(pending.index, .failed(HTTP2Response.notSent)) }
            if inFlight.isEmpty { context.close(promise: nil) }
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let closed = event as? StreamClosedEvent, let request = inFlight[closed.streamID] {
            if request.response.status != 0 {
                // The answer's status arrived before the stream broke off: it decides, with whatever body came.
                finish(closed.streamID, request)
            } else {
                // REFUSED_STREAM means the server did not process the stream (RFC 9113 §8.7).
                inFlight.removeValue(forKey: closed.streamID)
                request.batch.complete(request.index, .failed(closed.reason == .refusedStream ? "Refused" : "StreamReset"))
                drain()
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func finish(_ streamID: HTTP2StreamID, _ request: InFlight) {
        inFlight.removeValue(forKey: streamID)
        request.batch.complete(request.index, request.response)
        if !status.usable.load(ordering: .relaxed) && inFlight.isEmpty && queue.isEmpty {
            context?.close(promise: nil)
        } else {
            drain()
        }
    }
}
