import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import AdapterKit

/// The frame-level HTTP/2 client: what it keeps once a batch of requests is answered.
@Suite struct HTTP2ClientHandlerTests {
    /// A handler on an embedded channel that has received the server's SETTINGS.
    func connectedHandler() throws -> (EmbeddedChannel, HTTP2ClientHandler) {
        let handler = HTTP2ClientHandler(
            maximumStreams: 10, pingInterval: .seconds(60), pingTimeout: .seconds(20), status: HTTP2ConnectionStatus())
        let channel = EmbeddedChannel(handler: handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        try channel.writeInbound(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([]))))
        return (channel, handler)
    }

    func request() -> HTTP2Request {
        var headers = HPACKHeaders()
        headers.add(name: ":path", value: "/3/device/abc")
        return HTTP2Request(headers: headers, body: ByteBuffer(string: "{}"))
    }

    @Test func anAnsweredBatchIsReleasedBeforeItsDeadline() throws {
        let (channel, handler) = try connectedHandler()
        defer { _ = try? channel.finish() }
        weak var released: HTTP2ClientBatch?
        var answers: [HTTP2Response]?
        do {
            let promise = channel.eventLoop.makePromise(of: [HTTP2Response].self)
            promise.futureResult.whenSuccess { answers = $0 }
            let batch = HTTP2ClientBatch(count: 2, promise: promise)
            released = batch
            handler.submit([request(), request()], batch: batch, timeout: .seconds(30))
        }
        for stream in [1, 3] {
            var headers = HPACKHeaders()
            headers.add(name: ":status", value: "200")
            headers.add(name: "apns-id", value: "id-\(stream)")
            try channel.writeInbound(
                HTTP2Frame(streamID: HTTP2StreamID(stream), payload: .headers(.init(headers: headers, endStream: true))))
        }
        #expect(answers?.map(\.status) == [200, 200])
        #expect(answers?.map { $0.headers.first(name: "apns-id") } == ["id-1", "id-3"])
        // Neither the handler nor the batch's 30 s deadline holds the answered batch and its answers.
        #expect(released == nil)
    }

    @Test func aBatchNotAnsweredInTimeFailsWithTimeout() throws {
        let (channel, handler) = try connectedHandler()
        defer { _ = try? channel.finish() }
        var answers: [HTTP2Response]?
        let promise = channel.eventLoop.makePromise(of: [HTTP2Response].self)
        promise.futureResult.whenSuccess { answers = $0 }
        handler.submit([request()], batch: HTTP2ClientBatch(count: 1, promise: promise), timeout: .seconds(30))
        channel.embeddedEventLoop.advanceTime(by: .seconds(29))
        #expect(answers == nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(answers?.map(\.failure) == ["Timeout"])
    }
}
