import AdapterKit
import AsyncHTTPClient
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// A body is read to a size and a time limit: a server that sends a head and part of a body, then nothing while
/// keeping the connection open, does not hold the reader.
@Suite struct BoundedBodyTests {
    /// Answers every connection's first bytes with `answer` and then keeps the connection open, silent.
    final class StallingServer: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let answer: String

        init(answer: String) {
            self.answer = answer
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            context.writeAndFlush(NIOAny(ByteBuffer(string: answer)), promise: nil)
        }
    }

    static func withStallingServer(answer: String, _ body: (Int) async throws -> Void) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(StallingServer(answer: answer)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        do {
            try await body(server.localAddress?.port ?? 0)
        } catch {
            try? await server.close()
            try? await group.shutdownGracefully()
            throw error
        }
        try await server.close()
        try await group.shutdownGracefully()
    }

    /// The body read, or `nil` when it has not ended within `limit` of real time (it is then left running: a read
    /// that ignores its own limit fails the test instead of holding the suite).
    static func read(port: Int, upTo size: Int, within time: Duration, limit: Duration) async throws -> String? {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { _ = client.shutdown() }
        let response = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/"), timeout: .seconds(10))
        let result = Mutex<String?>(nil)
        let reading = Task {
            let body = String(buffer: await response.body.prefix(upTo: size, within: time))
            result.withLock { $0 = body }
        }
        let deadline = ContinuousClock.now + limit
        while result.withLock({ $0 }) == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        _ = reading
        return result.withLock { $0 }
    }

    @Test func aStalledBodyEndsAtTheTimeLimitWithWhatArrived() async throws {
        try await Self.withStallingServer(answer: "HTTP/1.1 400 Bad Request\r\nContent-Length: 100\r\n\r\n{\"reason\"") { port in
            let body = try await Self.read(port: port, upTo: 64 * 1024, within: .milliseconds(200), limit: .seconds(30))
            #expect(body == "{\"reason\"", "the read of a stalled body ends at its time limit with what arrived")
        }
    }

    @Test func aBodyIsCutAtItsSizeLimit() async throws {
        try await Self.withStallingServer(answer: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789") { port in
            let body = try await Self.read(port: port, upTo: 4, within: .seconds(30), limit: .seconds(30))
            #expect(body == "0123")
        }
    }
}
