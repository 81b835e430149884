import AdapterKit
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

/// The handler that gathers the writes between two flushes into one buffer.
@Suite struct WriteCoalescingHandlerTests {
    /// What completed writes' promises report (their callbacks are `@Sendable`).
    final class Completions: Sendable {
        let indices = Mutex<[Int]>([])
    }

    func channel() throws -> (EmbeddedChannel, WriteCoalescingHandler) {
        let handler = WriteCoalescingHandler()
        let channel = EmbeddedChannel(handler: handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        return (channel, handler)
    }

    @Test func theWritesOfOneFlushLeaveAsOneBufferInOrder() throws {
        let (channel, _) = try channel()
        defer { _ = try? channel.finish() }
        let completed = Completions()
        for index in 0..<5 {
            let promise = channel.eventLoop.makePromise(of: Void.self)
            promise.futureResult.whenSuccess { completed.indices.withLock { $0.append(index) } }
            channel.write(IOData.byteBuffer(ByteBuffer(string: "part\(index);")), promise: promise)
        }
        #expect(try channel.readOutbound(as: IOData.self) == nil)
        #expect(completed.indices.withLock { $0.isEmpty })
        channel.flush()
        let written = try #require(try channel.readOutbound(as: IOData.self))
        guard case .byteBuffer(let bytes) = written else {
            Issue.record("expected bytes, got \(written)")
            return
        }
        #expect(String(buffer: bytes) == "part0;part1;part2;part3;part4;")
        #expect(try channel.readOutbound(as: IOData.self) == nil)
        #expect(completed.indices.withLock { $0.sorted() } == [0, 1, 2, 3, 4])
        // The next flush starts a new buffer.
        channel.write(IOData.byteBuffer(ByteBuffer(string: "next")), promise: nil)
        channel.flush()
        #expect(try channel.readOutbound(as: IOData.self) == .byteBuffer(ByteBuffer(string: "next")))
    }

    @Test func heldFlushesLeaveOnlyWhenReleased() throws {
        let (channel, handler) = try channel()
        defer { _ = try? channel.finish() }
        handler.holdsFlushes = true
        for index in 0..<3 {
            channel.write(IOData.byteBuffer(ByteBuffer(string: "\(index)")), promise: nil)
            channel.flush()
        }
        #expect(try channel.readOutbound(as: IOData.self) == nil)
        handler.holdsFlushes = false
        handler.flushIfPending()
        #expect(try channel.readOutbound(as: IOData.self) == .byteBuffer(ByteBuffer(string: "012")))
        // Nothing held: releasing sends nothing more.
        handler.flushIfPending()
        #expect(try channel.readOutbound(as: IOData.self) == nil)
    }

    @Test func aFlushWithNothingWrittenWritesNothing() throws {
        let (channel, _) = try channel()
        defer { _ = try? channel.finish() }
        channel.flush()
        #expect(try channel.readOutbound(as: IOData.self) == nil)
    }

    @Test func aWriteOfNoBytesCompletesWithTheFlush() throws {
        let (channel, _) = try channel()
        defer { _ = try? channel.finish() }
        let completed = Completions()
        let promise = channel.eventLoop.makePromise(of: Void.self)
        promise.futureResult.whenSuccess { completed.indices.withLock { $0.append(0) } }
        channel.write(IOData.byteBuffer(ByteBuffer()), promise: promise)
        channel.flush()
        #expect(completed.indices.withLock { $0 } == [0])
    }

    @Test func aFailedWriteFailsEveryGatheredPromise() throws {
        let (channel, _) = try channel()
        var failures = 0
        for index in 0..<3 {
            let promise = channel.eventLoop.makePromise(of: Void.self)
            promise.futureResult.whenFailure { _ in failures += 1 }
            channel.write(IOData.byteBuffer(ByteBuffer(string: "\(index)")), promise: promise)
        }
        // Closing before the flush fails the gathered write, and with it each write's promise.
        _ = try? channel.finish()
        #expect(failures == 3)
    }
}
