import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization
import AdapterKit

/// A TLS listener that serves an emulator's `(Request) async -> Response` over HTTP/2 at frame level: one handler
/// per connection collects each stream's headers and body, runs the responder, and writes its answer on the stream,
/// with no child channel, codec or task per stream beyond the responder's own. A platform whose clients send one
/// request per device (FCM) is served this way so that the emulator is not the limit of a fan-out, as the APNs
/// emulator is; the Hummingbird listener costs several times more per request.
///
/// ALPN offers `h2` only. Answers as Hummingbird would send them, with two breaks: an answer whose status is below 200
/// (the emulators' dropped connection) closes the connection, and a body whose writer throws after writing part of
/// it (a truncated ``RawAnswer``) is sent as far as written, announcing its whole length, and the stream is reset.
final class FrameLevelHTTP2Listener: Service, Sendable {
    private let host: String
    private let port: Int
    private let tls: EmulatorTLS
    private let respond: @Sendable (Request) async -> Response
    private let didBind: @Sendable (Int?) -> Void
    private let connections = Mutex<[ObjectIdentifier: any Channel]>([:])

    init(
        host: String, port: Int, tls: EmulatorTLS, respond: @escaping @Sendable (Request) async -> Response,
        didBind: @escaping @Sendable (Int?) -> Void
    ) {
        self.host = host
        self.port = port
        self.tls = tls
        self.respond = respond
        self.didBind = didBind
    }

    /// Listens until a graceful shutdown (or cancellation), then closes the listener and every connection.
    func run() async throws {
        let sslContext = try NIOSSLContext(configuration: tls.serverConfiguration(applicationProtocols: ["h2"]))
        let respond = self.respond
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: sslContext))
                    try sync.addHandler(WriteCoalescingHandler())
                    try sync.addHandler(
                        NIOHTTP2Handler(
                            mode: .server,
                            initialSettings: [
                                HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000),
                                HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
                                HTTP2Setting(parameter: .maxHeaderListSize, value: 64 << 10),
                            ]))
                    try sync.addHandler(FrameLevelHTTP2Handler(respond: respond))
                    self.track(channel)
                }
            }
            .bind(host: host, port: port)
            .get()
        didBind(listener.localAddress?.port)
        try? await gracefulShutdown()
        try? await listener.close()
        let open = connections.withLock { connections in
            defer { connections.removeAll() }
            return Array(connections.values)
        }
        for connection in open { try? await connection.close() }
    }

    private func track(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        connections.withLock { $0[id] = channel }
        channel.closeFuture.whenComplete { [self] _ in _ = connections.withLock { $0.removeValue(forKey: id) } }
    }
}

/// One connection of a ``FrameLevelHTTP2Listener``. Confined to its channel's event loop.
final class FrameLevelHTTP2Handler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct Stream {
        var headers: HPACKHeaders
        var body: ByteBuffer?
    }

    private let respond: @Sendable (Request) async -> Response
    private var streams: [HTTP2StreamID: Stream] = [:]
    private var context: ChannelHandlerContext?
    /// Request bytes consumed since the last connection WINDOW_UPDATE.
    private var consumedBytes = 0
    private var reading = false
    private var needsFlush = false
    private var flushScheduled = false

    init(respond: @escaping @Sendable (Request) async -> Response) {
        self.respond = respond
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        // A large connection window so hundreds of requests in flight do not stall.
        context.writeAndFlush(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: 16 << 20))),
            promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reading = true
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            // A second HEADERS frame on a stream is its trailers: they end the request and are not read.
            if streams[frame.streamID] == nil { streams[frame.streamID] = Stream(headers: headers.headers, body: nil) }
            if headers.endStream { start(frame.streamID, context: context) }
        case .data(let data):
            returnToConnectionWindow(data.data.readableBytes + (data.paddingBytes ?? 0), context: context)
            guard var stream = streams[frame.streamID] else { return }
            if case .byteBuffer(var buffer) = data.data, buffer.readableBytes > 0 {
                if stream.body == nil { stream.body = buffer } else { stream.body!.writeBuffer(&buffer) }
                streams[frame.streamID] = stream
            }
            if data.endStream { start(frame.streamID, context: context) }
        case .rstStream:
            streams.removeValue(forKey: frame.streamID)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        reading = false
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// Gives consumed request bytes back to the client's connection window once they add up to a megabyte.
    private func returnToConnectionWindow(_ bytes: Int, context: ChannelHandlerContext) {
        consumedBytes += bytes
        guard consumedBytes >= 1 << 20 else { return }
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: consumedBytes))),
            promise: nil)
        consumedBytes = 0
        needsFlush = true
    }

    /// Runs the responder for a complete request and writes its answer back on the event loop.
    private func start(_ streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        guard let request = Self.request(stream.headers, body: stream.body) else {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.protocolError))), promise: nil)
            needsFlush = true
            return
        }
        let loop = context.eventLoop
        let handler = NIOLoopBound(self, eventLoop: loop)
        let respond = self.respond
        Task {
            let answer = await CollectedAnswer(await respond(request))
            loop.execute { handler.value.write(answer, streamID: streamID) }
        }
    }

    /// A Hummingbird request from a stream's headers (pseudo-headers first) and body; `nil` when `:method` or
    /// `:path` is missing or unusable.
    static func request(_ headers: HPACKHeaders, body: ByteBuffer?) -> Request? {
        var method: HTTPRequest.Method?
        var path: String?
        var authority: String?
        var fields = HTTPFields()
        for (name, value, _) in headers {
            switch name {
            case ":method": method = HTTPRequest.Method(value)
            case ":path": path = value
            case ":authority": authority = value
            case ":scheme": break
            default:
                guard !name.hasPrefix(":"), let fieldName = HTTPField.Name(name) else { continue }
                fields.append(HTTPField(name: fieldName, value: value))
            }
        }
        guard let method, let path, !path.isEmpty else { return nil }
        let head = HTTPRequest(method: method, scheme: "https", authority: authority, path: path, headerFields: fields)
        return Request(head: head, body: RequestBody(buffer: body ?? ByteBuffer()))
    }

    private func write(_ answer: CollectedAnswer, streamID: HTTP2StreamID) {
        guard let context, context.channel.isActive else { return }
        guard answer.status >= 200 else {
            // An interim status is all the emulator answers when it drops a connection: the client gets nothing.
            context.close(promise: nil)
            return
        }
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: String(answer.status))
        for field in answer.headers where field.name != .contentLength {
            headers.add(name: field.name.canonicalName, value: field.value)
        }
        headers.add(name: "content-length", value: String(answer.announcedLength))
        let endsWithHeaders = answer.body.readableBytes == 0 && !answer.brokenOff
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: endsWithHeaders)))),
            promise: nil)
        if answer.body.readableBytes > 0 || answer.brokenOff {
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(answer.body), endStream: !answer.brokenOff)))),
                promise: nil)
        }
        if answer.brokenOff {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.internalError))), promise: nil)
        }
        scheduleFlush(context: context)
    }

    /// Flushes once per turn of the event loop however many answers were written in it (at the end of the read
    /// batch while reading).
    private func scheduleFlush(context: ChannelHandlerContext) {
        if reading {
            needsFlush = true
            return
        }
        guard !flushScheduled else { return }
        flushScheduled = true
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let handler = handler.value
            handler.flushScheduled = false
            handler.context?.flush()
        }
    }
}

/// A responder's answer with its body read: what goes on the wire.
private struct CollectedAnswer: Sendable {
    var status: Int
    var headers: HTTPFields
    var body: ByteBuffer
    /// The length the answer announces: its body's, or the whole of a body that broke off.
    var announcedLength: Int
    /// Whether the body's writer threw before finishing: the stream is reset after what was written.
    var brokenOff: Bool

    init(_ response: Response) async {
        status = response.status.code
        headers = response.headers
        let sink = BodySink()
        var broke = false
        do {
            try await response.body.write(CollectingWriter(sink: sink))
        } catch {
            broke = true
        }
        body = sink.buffer
        brokenOff = broke && status >= 200
        announcedLength = response.body.contentLength ?? sink.buffer.readableBytes
    }
}

/// Where a ``CollectingWriter`` gathers a body.
private final class BodySink {
    var buffer = ByteBuffer()
}

/// A response body writer that keeps what is written.
private struct CollectingWriter: ResponseBodyWriter {
    let sink: BodySink

    mutating func write(_ buffer: ByteBuffer) async throws {
        var buffer = buffer
        sink.buffer.writeBuffer(&buffer)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
