import AdapterKit
import Foundation
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import AdapterKit

/// Requests leave in stream order and in one network write per flush: swift-nio-http2 sends the DATA frames of one
/// flush in no particular order, and a stream that ends out of order costs both ends a shift of every younger
/// stream's state.
@Suite struct HTTP2RequestOrderTests {
    /// Records the streams whose request ended, in the order the server saw them.
    final class EndedStreams: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        var order: [HTTP2StreamID] = []

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            if case .data(let data) = frame.payload, data.endStream { order.append(frame.streamID) }
        }
    }

    /// Moves every byte one channel wrote to the other; returns how many writes carried them.
    @discardableResult
    func deliver(from source: EmbeddedChannel, to target: EmbeddedChannel) throws -> Int {
        var writes = 0
        while let data = try source.readOutbound(as: IOData.self) {
            guard case .byteBuffer(let bytes) = data else { continue }
            writes += 1
            try target.writeInbound(bytes)
        }
        return writes
    }

    func request(_ index: Int) -> HTTP2Request {
        var headers = HPACKHeaders()
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: "api.push.apple.com")
        headers.add(name: ":path", value: "/3/device/\(String(format: "%064x", index))")
        return HTTP2Request(headers: headers, body: ByteBuffer(string: #"{"aps":{"alert":"\#(index)"}}"#))
    }

    @Test(arguments: [true, false])
    func requestsEndInStreamOrderAndLeaveInOneWrite(whileReading: Bool) throws {
        let coalescer = WriteCoalescingHandler()
        let handler = HTTP2ClientHandler(
            maximumStreams: 1000, pingInterval: .seconds(60), pingTimeout: .seconds(20), status: HTTP2ConnectionStatus(),
            coalescer: coalescer)
        let client = EmbeddedChannel()
        try client.pipeline.syncOperations.addHandlers([
            coalescer, NIOHTTP2Handler(mode: .client, initialSettings: nioDefaultSettings), handler,
        ])
        let ended = EndedStreams()
        let server = EmbeddedChannel()
        try server.pipeline.syncOperations.addHandlers([
            NIOHTTP2Handler(mode: .server, initialSettings: [HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000)]),
            ended,
        ])
        defer {
            _ = try? client.finish()
            _ = try? server.finish()
        }
        try client.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        try server.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 50000)).wait()
        // Preface and SETTINGS both ways, then the SETTINGS acknowledgements.
        for _ in 0..<3 {
            try deliver(from: client, to: server)
            try deliver(from: server, to: client)
        }
        let promise = client.eventLoop.makePromise(of: [HTTP2Response].self)
        let count = 200
        if whileReading {
            // Requests queued while an answer is read leave with the read's completion.
            handler.channelRead(context: try client.pipeline.syncOperations.context(handler: handler),
                data: NIOAny(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(), ack: true))))
            handler.submit((0..<count).map(request), batch: HTTP2ClientBatch(count: count, promise: promise), timeout: .seconds(30))
            #expect(try client.readOutbound(as: IOData.self) == nil)
            handler.channelReadComplete(context: try client.pipeline.syncOperations.context(handler: handler))
        } else {
            handler.submit((0..<count).map(request), batch: HTTP2ClientBatch(count: count, promise: promise), timeout: .seconds(30))
        }
        #expect(try deliver(from: client, to: server) == 1)
        let expected = (0..<count).map { HTTP2StreamID(1 + 2 * $0) }
        #expect(ended.order == expected)
    }
}
