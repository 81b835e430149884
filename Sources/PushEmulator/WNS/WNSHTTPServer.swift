import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// One HTTP/1.1 request as the WNS emulator sees it.
struct WNSHTTPRequest: Sendable {
    var method: HTTPMethod
    var uri: String
    var headers: HTTPHeaders
    var body: ByteBuffer

    /// The path without the query.
    var path: Substring {
        uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    }

    /// The decoded query parameters.
    var query: [String: String] {
        guard let mark = uri.firstIndex(of: "?") else { return [:] }
        return WNSHTTPRequest.parseForm(String(uri[uri.index(after: mark)...]))
    }

    /// Parses `a=b&c=d` with percent- and plus-decoding.
    static func parseForm(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String {
                part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(part)
            }
            result[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return result
    }
}

/// The emulator's answer to one request.
struct WNSHTTPResponse: Sendable {
    var status: HTTPResponseStatus
    var headers: HTTPHeaders = [:]
    var body: ByteBuffer?
    /// Delay before answering.
    var delay: TimeAmount = .zero
    /// Close the connection without answering.
    var dropConnection = false
    /// Send the head (announcing the whole body) and half the body, then close the connection.
    var truncated = false

    init(status: HTTPResponseStatus, headers: HTTPHeaders = [:], body: ByteBuffer? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A raw answer as given (see ``RawAnswer``).
    init(_ answer: RawAnswer) {
        guard answer.status >= 200 else {
            self.init(status: .ok)
            dropConnection = true
            return
        }
        var headers = HTTPHeaders()
        for field in answer.sendableHeaders { headers.add(name: field.name, value: field.value) }
        self.init(status: HTTPResponseStatus(statusCode: answer.status), headers: headers, body: ByteBuffer(bytes: answer.sendableBody))
        truncated = answer.truncated
    }

    /// A JSON answer.
    static func json(_ status: HTTPResponseStatus, _ text: String) -> WNSHTTPResponse {
        WNSHTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: ByteBuffer(string: text))
    }
}

/// A small HTTP/1.1 server (optionally over TLS) that answers each request with a synchronous function run on the
/// connection's event loop. Keep-alive and pipelining are supported.
final class WNSHTTPServer: Sendable {
    typealias Respond = @Sendable (WNSHTTPRequest) -> WNSHTTPResponse

    let channel: any Channel
    private let counter: ConnectionCounter

    /// The bound port.
    var port: Int { channel.localAddress?.port ?? 0 }

    /// Connections accepted so far.
    var connectionCount: Int { counter.count.load(ordering: .relaxed) }

    /// The most connections that were open at the same time.
    var peakOpenConnections: Int { counter.peak.load(ordering: .relaxed) }

    private init(channel: any Channel, counter: ConnectionCounter) {
        self.channel = channel
        self.counter = counter
    }

    private final class ConnectionCounter: Sendable {
        let count = Atomic<Int>(0)
        let open = Atomic<Int>(0)
        let peak = Atomic<Int>(0)

        func opened() {
            count.add(1, ordering: .relaxed)
            let now = open.add(1, ordering: .relaxed).newValue
            var seen = peak.load(ordering: .relaxed)
            while now > seen {
                let (exchanged, original) = peak.compareExchange(expected: seen, desired: now, ordering: .relaxed)
                if exchanged { break }
                seen = original
            }
        }

        func closed() { open.subtract(1, ordering: .relaxed) }
    }

    /// Binds and starts serving.
    static func start(
        host: String, port: Int, tls: NIOSSLContext?, maximumBodyBytes: Int, respond: @escaping Respond
    ) async throws -> WNSHTTPServer {
        let counter = ConnectionCounter()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 512)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                counter.opened()
                channel.closeFuture.whenComplete { _ in counter.closed() }
                return channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        WNSHTTPHandler(maximumBodyBytes: maximumBodyBytes, respond: respond))
                }
            }
            .bind(host: host, port: port)
            .get()
        return WNSHTTPServer(channel: channel, counter: counter)
    }

    /// Stops accepting connections.
    func close() async {
        try? await channel.close()
    }
}

/// Collects one request at a time and writes the answer.
private final class WNSHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let maximumBodyBytes: Int
    private let respond: WNSHTTPServer.Respond
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()
    private var tooLarge = false

    init(maximumBodyBytes: Int, respond: @escaping WNSHTTPServer.Respond) {
        self.maximumBodyBytes = maximumBodyBytes
        self.respond = respond
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.clear()
            tooLarge = false
        case .body(var chunk):
            if body.readableBytes + chunk.readableBytes > maximumBodyBytes {
                tooLarge = true
            } else {
                body.writeBuffer(&chunk)
            }
        case .end:
            guard let head else { return }
            self.head = nil
            let response: WNSHTTPResponse
            if tooLarge {
                response = WNSHTTPResponse(status: .payloadTooLarge)
            } else {
                response = respond(WNSHTTPRequest(method: head.method, uri: head.uri, headers: head.headers, body: body))
            }
            let keepAlive = head.isKeepAlive && !tooLarge
            if response.delay > .zero {
                let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
                let contextBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: response.delay) {
                    loopBound.value.write(response, version: head.version, keepAlive: keepAlive, context: contextBound.value)
                }
            } else {
                write(response, version: head.version, keepAlive: keepAlive, context: context)
            }
        }
    }

    private func write(_ response: WNSHTTPResponse, version: HTTPVersion, keepAlive: Bool, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        if response.dropConnection {
            context.close(promise: nil)
            return
        }
        var headers = response.headers
        headers.replaceOrAdd(name: "Content-Length", value: "\(response.body?.readableBytes ?? 0)")
        if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: response.status, headers: headers))), promise: nil)
        if response.truncated {
            let half = response.body.map { $0.getSlice(at: $0.readerIndex, length: $0.readableBytes / 2) ?? ByteBuffer() }
            if let half, half.readableBytes > 0 { context.write(wrapOutboundOut(.body(.byteBuffer(half))), promise: nil) }
            let channel = context.channel
            context.flush()
            channel.close(promise: nil)
            return
        }
        if let body = response.body, body.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        if keepAlive {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        } else {
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
