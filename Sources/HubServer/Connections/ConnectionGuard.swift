import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Limits and deadlines for client connections, so that idle or slow sockets cannot keep the hub from serving
/// others.
///
/// - A new connection must send a complete request head within ``Settings/requestHeaderTimeout``; a request's body
///   must arrive within ``Settings/requestBodyTimeout`` of its head; a keep-alive connection with no request in
///   progress is closed after ``Settings/idleTimeout``.
/// - At most ``Settings/maximumConnections`` are open. At the limit a new connection takes the place of another:
///   first the oldest socket that never sent a whole request, then the oldest slow request body, then the
///   longest-idle keep-alive connection. A connection whose request the hub is answering is never evicted, so
///   established clients keep working; when every connection is being answered, the new one is closed at once.
public final class ConnectionGuard: Sendable {
    /// The limits.
    public struct Settings: Sendable, Hashable {
        /// Open connections at most.
        public var maximumConnections: Int
        /// Time from accepting a connection to its first complete request head.
        public var requestHeaderTimeout: TimeAmount
        /// Time from a request head to the end of its body.
        public var requestBodyTimeout: TimeAmount
        /// Time a keep-alive connection may wait for its next request.
        public var idleTimeout: TimeAmount

        /// Creates settings.
        public init(
            maximumConnections: Int, requestHeaderTimeout: TimeAmount, requestBodyTimeout: TimeAmount,
            idleTimeout: TimeAmount
        ) {
            self.maximumConnections = maximumConnections
            self.requestHeaderTimeout = requestHeaderTimeout
            self.requestBodyTimeout = requestBodyTimeout
            self.idleTimeout = idleTimeout
        }
    }

    /// Where a connection is in its life, as the guard ranks it for eviction.
    enum Phase {
        /// Waiting for a request head since the deadline; `served` once it has been answered at least once.
        case awaitingHead(since: NIODeadline, served: Bool)
        /// Reading a request body since the deadline.
        case readingBody(since: NIODeadline)
        /// A whole request was read; the hub is answering it. Never evicted.
        case processing
    }

    /// One open connection as the guard sees it.
    struct Entry {
        var channel: any Channel
        var phase: Phase

        /// Eviction rank (lower goes first) and age, or `nil` when the connection must not be evicted: sockets that
        /// never sent a whole request, then slow request bodies, then idle keep-alive connections.
        var evictionOrder: (rank: Int, since: NIODeadline)? {
            switch phase {
            case .awaitingHead(let since, false): (0, since)
            case .readingBody(let since): (1, since)
            case .awaitingHead(let since, true): (2, since)
            case .processing: nil
            }
        }
    }

    struct State {
        var next = 0
        var open: [Int: Entry] = [:]
    }

    /// The limits in force.
    public let settings: Settings
    let logger: Logger
    private let state = Mutex(State())

    /// Creates a guard shared by every connection of one server.
    public init(settings: Settings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    /// Open connections now.
    public var openConnections: Int { state.withLock { $0.open.count } }

    /// A handler for one new connection, to add to its pipeline after HTTP decoding.
    public func makeHandler() -> Handler { Handler(guard: self) }

    /// Registers a connection; returns its number, or `nil` when it must be closed because every connection is
    /// answering a request. When full, evicts the connection that ranks first in ``Entry/evictionOrder``.
    func admit(_ channel: any Channel) -> Int? {
        let (number, evicted): (Int?, (any Channel)?) = state.withLock { state in
            var evicted: (any Channel)?
            if state.open.count >= settings.maximumConnections {
                var best: (key: Int, rank: Int, since: NIODeadline)?
                for (key, entry) in state.open {
                    guard let order = entry.evictionOrder else { continue }
                    if best == nil || (order.rank, order.since) < (best!.rank, best!.since) {
                        best = (key, order.rank, order.since)
                    }
                }
                guard let best else { return (nil, nil) }
                evicted = state.open.removeValue(forKey: best.key)?.channel
            }
            state.next += 1
            state.open[state.next] = Entry(channel: channel, phase: .awaitingHead(since: .now(), served: false))
            return (state.next, evicted)
        }
        if let evicted {
            logger.debug("connection limit reached; closing the least valuable connection")
            evicted.close(promise: nil)
        }
        if number == nil { logger.warning("connection limit reached and every connection is answering a request; refusing one") }
        return number
    }

    func set(_ number: Int, _ phase: Phase) {
        state.withLock { state in state.open[number]?.phase = phase }
    }

    func remove(_ number: Int) {
        _ = state.withLock { state in state.open.removeValue(forKey: number) }
    }

    /// The per-connection handler: tracks requests and enforces the deadlines.
    public final class Handler: ChannelDuplexHandler, RemovableChannelHandler {
        public typealias InboundIn = HTTPRequestPart
        public typealias InboundOut = HTTPRequestPart
        public typealias OutboundIn = HTTPResponsePart
        public typealias OutboundOut = HTTPResponsePart

        let owner: ConnectionGuard
        var number: Int?
        var timer: Scheduled<Void>?
        /// Requests whose head arrived and whose response has not ended.
        var inProgress = 0
        /// Whether a request's body is being read.
        var readingBody = false

        init(guard owner: ConnectionGuard) {
            self.owner = owner
        }

        public func handlerAdded(context: ChannelHandlerContext) {
            guard let number = owner.admit(context.channel) else {
                context.close(promise: nil)
                return
            }
            self.number = number
            arm(context, after: owner.settings.requestHeaderTimeout)
        }

        public func handlerRemoved(context: ChannelHandlerContext) {
            timer?.cancel()
            if let number { owner.remove(number) }
            number = nil
        }

        public func channelInactive(context: ChannelHandlerContext) {
            timer?.cancel()
            if let number { owner.remove(number) }
            number = nil
            context.fireChannelInactive()
        }

        public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head:
                inProgress += 1
                readingBody = true
                if let number { owner.set(number, .readingBody(since: .now())) }
                arm(context, after: owner.settings.requestBodyTimeout)
            case .end:
                readingBody = false
                if let number { owner.set(number, .processing) }
                timer?.cancel()
                timer = nil
            case .body:
                break
            }
            context.fireChannelRead(data)
        }

        public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if case .end = unwrapOutboundIn(data) {
                inProgress = max(0, inProgress - 1)
                if inProgress == 0 && !readingBody {
                    if let number { owner.set(number, .awaitingHead(since: .now(), served: true)) }
                    arm(context, after: owner.settings.idleTimeout)
                }
            }
            context.write(data, promise: promise)
        }

        /// (Re)starts the one deadline of this connection.
        func arm(_ context: ChannelHandlerContext, after amount: TimeAmount) {
            timer?.cancel()
            let channel = context.channel
            timer = context.eventLoop.scheduleTask(in: amount) {
                channel.close(promise: nil)
            }
        }
    }
}
