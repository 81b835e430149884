import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Synchronization
import Testing

@testable import AdapterKit

/// Keep-alive PINGs: when one is sent, when an unanswered one closes the connection, and that a held-up event loop
/// does not count against the server.
@Suite struct HTTP2KeepAliveTests {
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    @Test func aPingIsSentEachIntervalWhileTheServerAnswers() {
        var keepAlive = HTTP2KeepAlive(interval: .seconds(1), timeout: .seconds(3), now: start)
        #expect(keepAlive.nextTick == start + .seconds(1))
        for second in 1...10 {
            #expect(keepAlive.tick(now: start + .seconds(Int64(second))) == .sendPing)
            keepAlive.acknowledged()
        }
        #expect(keepAlive.nextTick == start + .seconds(11))
    }

    @Test func anUnansweredPingClosesTheConnectionOnceItsTimeoutHasPassed() {
        var keepAlive = HTTP2KeepAlive(interval: .seconds(1), timeout: .seconds(3), now: start)
        #expect(keepAlive.tick(now: start + .seconds(1)) == .sendPing)
        #expect(keepAlive.tick(now: start + .seconds(2)) == .wait)
        #expect(keepAlive.tick(now: start + .seconds(3)) == .wait)
        #expect(keepAlive.tick(now: start + .seconds(4)) == .closeConnection)
    }

    @Test func aTickThatRunsLateDoesNotCountTheStallAgainstTheServer() {
        var keepAlive = HTTP2KeepAlive(interval: .seconds(1), timeout: .seconds(3), now: start)
        #expect(keepAlive.tick(now: start + .seconds(1)) == .sendPing)
        // The loop was held up for 10 s: the acknowledgement may be waiting to be read, so no verdict yet.
        #expect(keepAlive.tick(now: start + .seconds(12)) == .wait)
        keepAlive.acknowledged()
        #expect(keepAlive.tick(now: start + .seconds(13)) == .sendPing)
        // Unanswered after that with the loop running on time: closed once the timeout has passed.
        #expect(keepAlive.tick(now: start + .seconds(14)) == .wait)
        #expect(keepAlive.tick(now: start + .seconds(15)) == .wait)
        #expect(keepAlive.tick(now: start + .seconds(16)) == .closeConnection)
    }

    @Test func aStallAfterThePingMovesItsDeadlineByTheStallOnly() {
        var keepAlive = HTTP2KeepAlive(interval: .seconds(1), timeout: .seconds(3), now: start)
        #expect(keepAlive.tick(now: start + .seconds(1)) == .sendPing)
        #expect(keepAlive.tick(now: start + .seconds(2)) == .wait)
        // Due at 3 s, ran at 5 s: 2 s of stall move the deadline from 4 s to 6 s.
        #expect(keepAlive.tick(now: start + .seconds(5)) == .wait)
        #expect(keepAlive.pingDeadline == start + .seconds(6))
        #expect(keepAlive.tick(now: start + .seconds(6)) == .closeConnection)
    }

    // MARK: The handler

    /// A connected handler with a 1 s PING interval and a 3 s timeout, on an embedded loop whose clock the test moves.
    func connectedHandler() throws -> (EmbeddedChannel, HTTP2ClientHandler, HTTP2ConnectionStatus) {
        let status = HTTP2ConnectionStatus()
        let handler = HTTP2ClientHandler(maximumStreams: 10, pingInterval: .seconds(1), pingTimeout: .seconds(3), status: status)
        let channel = EmbeddedChannel(handler: handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        try channel.writeInbound(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([]))))
        return (channel, handler, status)
    }

    /// The PING frames the handler wrote since the last call.
    func pingsWritten(_ channel: EmbeddedChannel) throws -> Int {
        var pings = 0
        while let frame = try channel.readOutbound(as: HTTP2Frame.self) {
            if case .ping(_, ack: false) = frame.payload { pings += 1 }
        }
        return pings
    }

    @Test func theHandlerKeepsAConnectionWhosePingsAreAcknowledged() throws {
        let (channel, _, status) = try connectedHandler()
        defer { _ = try? channel.finish() }
        _ = try pingsWritten(channel)
        for _ in 0..<10 {
            channel.embeddedEventLoop.advanceTime(by: .seconds(1))
            #expect(try pingsWritten(channel) == 1)
            try channel.writeInbound(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(), ack: true)))
        }
        #expect(channel.isActive)
        let usable = status.usable.load(ordering: .relaxed)
        #expect(usable)
        let acknowledged = status.pingsAcknowledged.load(ordering: .relaxed)
        #expect(acknowledged == 10)
    }

    @Test func theHandlerClosesAConnectionWhosePingIsNotAcknowledgedAndFailsWhatIsInFlight() throws {
        let (channel, handler, status) = try connectedHandler()
        defer { _ = try? channel.finish() }
        var answers: [HTTP2Response]?
        let promise = channel.eventLoop.makePromise(of: [HTTP2Response].self)
        promise.futureResult.whenSuccess { answers = $0 }
        var headers = HPACKHeaders()
        headers.add(name: ":path", value: "/3/device/abc")
        handler.submit(
            [HTTP2Request(headers: headers, body: ByteBuffer(string: "{}"))], batch: HTTP2ClientBatch(count: 1, promise: promise),
            timeout: .seconds(30))
        _ = try pingsWritten(channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(try pingsWritten(channel) == 1)
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(channel.isActive)
        #expect(answers == nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
        let usable = status.usable.load(ordering: .relaxed)
        #expect(!usable)
        #expect(answers?.map(\.failure) == ["ConnectionClosed"])
        #expect(try pingsWritten(channel) == 0)
    }
}
