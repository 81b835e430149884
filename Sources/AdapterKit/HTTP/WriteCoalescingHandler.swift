import NIOCore

/// Gathers the bytes written between two flushes into one buffer, placed between a TLS handler and an HTTP/2
/// handler.
///
/// swift-nio-http2 writes every frame as a buffer of its own (a DATA frame as two: its 9-byte header and its
/// payload), and NIOSSL encrypts every buffered write as a TLS record of its own. A small request (HEADERS, then
/// DATA) therefore costs three records, each with its own encryption and 22 bytes of overhead, on both ends.
/// Gathered, the writes of one flush leave in as few records as their size needs.
///
/// While ``holdsFlushes`` is set, flushes are only noted and ``flushIfPending()`` sends them: a writer can flush
/// after every request (so that swift-nio-http2, which sends the DATA frames of one flush in no particular order,
/// sends them in stream order) and still write them to the network once.
///
/// Confined to its channel's event loop.
public final class WriteCoalescingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    public typealias OutboundIn = IOData
    public typealias OutboundOut = IOData

    /// Bytes written since the last flush.
    private var gathered: ByteBuffer?
    /// The promise of the gathered write: each write's promise is completed with it.
    private var promise: EventLoopPromise<Void>?
    private var context: ChannelHandlerContext?
    private var flushPending = false
    /// When set, a flush is held until ``flushIfPending()``.
    public var holdsFlushes = false

    /// Creates the handler.
    public init() {}

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        if context.channel.isActive {
            // Taken out of a live pipeline: what it gathered still leaves, in order.
            forwardGathered(context: context)
            if flushPending {
                flushPending = false
                context.flush()
            }
        } else {
            dropGathered(ChannelError.ioOnClosedChannel)
        }
        self.context = nil
    }

    /// A full close fails what was gathered and not flushed, as a channel fails unflushed writes; before closing
    /// only the output, it goes on unflushed, as it would without this handler.
    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        switch mode {
        case .all: dropGathered(ChannelError.ioOnClosedChannel)
        case .output: forwardGathered(context: context)
        case .input: break
        }
        context.close(mode: mode, promise: promise)
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .byteBuffer(var bytes):
            if gathered == nil {
                gathered = context.channel.allocator.buffer(capacity: max(bytes.readableBytes, 4096))
            }
            gathered!.writeBuffer(&bytes)
            if let promise {
                if let combined = self.promise {
                    combined.futureResult.cascade(to: promise)
                } else {
                    self.promise = promise
                }
            }
        case .fileRegion:
            // Not gathered: what came before leaves first, in order.
            forwardGathered(context: context)
            context.write(data, promise: promise)
        }
    }

    public func flush(context: ChannelHandlerContext) {
        if holdsFlushes {
            flushPending = true
        } else {
            send(context: context)
        }
    }

    /// Sends a flush held while ``holdsFlushes`` was set.
    public func flushIfPending() {
        guard flushPending, let context else { return }
        send(context: context)
    }

    private func send(context: ChannelHandlerContext) {
        flushPending = false
        forwardGathered(context: context)
        context.flush()
    }

    private func dropGathered(_ error: any Error) {
        gathered = nil
        flushPending = false
        let promise = self.promise
        self.promise = nil
        promise?.fail(error)
    }

    private func forwardGathered(context: ChannelHandlerContext) {
        // Even empty: a write of no bytes still has its promise to complete.
        guard let bytes = gathered else { return }
        gathered = nil
        let promise = self.promise
        self.promise = nil
        context.write(wrapOutboundOut(.byteBuffer(bytes)), promise: promise)
    }
}
