import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// One HTTP/1.1 request for ``HTTP1ConnectionPool/send(_:timeout:)``: an https URL's host and port, the request
/// target (path and query) and headers, and the body.
public struct HTTP1Request: Sendable {
    /// The server's host (a name is also sent as SNI and checked against its certificate).
    public var host: String
    /// The server's port.
    public var port: Int
    /// The request line and headers (`Host` and `Content-Length` are set by the pool).
    public var head: HTTPRequestHead
    /// The body.
    public var body: ByteBuffer

    /// Creates a request.
    public init(host: String, port: Int, head: HTTPRequestHead, body: ByteBuffer) {
        self.host = host
        self.port = port
        self.head = head
        self.body = body
    }
}

/// The answer to one ``HTTP1Request``: its status and headers (the body is read and dropped), or why there was none.
public struct HTTP1Response: Sendable {
    /// The HTTP status, or 0 when no answer came (``failure`` says why).
    public var status: Int
    /// The response headers.
    public var headers: HTTPHeaders
    /// Why no answer came: `ConnectFailed`, `ConnectionClosed`, `Timeout`.
    public var failure: String?

    /// An answer.
    public init(status: Int, headers: HTTPHeaders) {
        self.status = status
        self.headers = headers
    }

    /// No answer, for `why`.
    public static func failed(_ why: String) -> HTTP1Response {
        var response = HTTP1Response(status: 0, headers: [:])
        response.failure = why
        return response
    }
}

/// Keep-alive HTTP/1.1 connections over TLS to the hosts of a platform that takes one request per device and
/// answers with a status and headers (WNS). A batch of requests is handed to each host's connections in one step on
/// their event loops; a connection takes the next waiting request as soon as it is answered, and new connections
/// open while requests wait, up to ``Settings/maximumConnectionsPerHost``. Each request is written (head and body)
/// in one flush, with no task, promise or async step of its own.
///
/// A host's connections are spread over the platform event loops, a share on each; a connection idle for
/// ``Settings/idleTimeout`` is closed. A request whose connection closes before its answer ends with the failure
/// `ConnectionClosed` (it may have been processed, so it is not sent again here); one still waiting when its batch's
/// deadline passes ends with `Timeout`, and a connection still busy with it is closed.
public final class HTTP1ConnectionPool: Sendable {
    /// How the pool connects.
    public struct Settings: Sendable {
        /// Connections per host at most, over all event loops.
        public var maximumConnectionsPerHost: Int
        /// Deadline of opening a connection (TCP and TLS).
        public var connectTimeout: TimeAmount
        /// An idle connection is closed after this.
        public var idleTimeout: TimeAmount
        /// The TLS configuration (trust roots); certificates are checked against the host's name.
        public var tls: TLSConfiguration

        /// Creates settings.
        public init(
            maximumConnectionsPerHost: Int, connectTimeout: TimeAmount = .seconds(10), idleTimeout: TimeAmount = .seconds(60),
            tls: TLSConfiguration = .makeClientConfiguration()
        ) {
            self.maximumConnectionsPerHost = maximumConnectionsPerHost
            self.connectTimeout = connectTimeout
            self.idleTimeout = idleTimeout
            self.tls = tls
        }
    }

    private struct HostKey: Hashable {
        var host: String
        var port: Int
        var shard: Int
    }

    /// The settings.
    public let settings: Settings
    /// The TLS context, or why the settings' TLS configuration could not be loaded.
    private let sslContext: Result<NIOSSLContext, any Error>
    private let group: any EventLoopGroup
    private let loops: [any EventLoop]
    private let hosts = Mutex<[HostKey: NIOLoopBound<HTTP1HostPool>]>([:])
    private let opened = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)

    /// Creates a pool; connections open on first use. A TLS configuration that cannot be loaded makes every request
    /// end with the failure `TLSConfigurationUnusable` (it is checked when the settings are read, so this is a
    /// safety net, not a path).
    public init(settings: Settings, group: (any EventLoopGroup)? = nil) {
        self.settings = settings
        var tls = settings.tls
        tls.applicationProtocols = ["http/1.1"]
        self.sslContext = Result { try SharedTLSContexts.context(for: tls) }
        let group = group ?? PlatformEventLoops.shared
        self.group = group
        self.loops = Array(group.makeIterator())
    }

    /// Connections opened so far (reconnects included).
    public var connectionsOpened: Int { opened.load(ordering: .relaxed) }

    /// Sends requests and returns one answer each, in order; never fails (failures are answers). A host's requests
    /// are spread over its connections on every event loop.
    public func send(_ requests: [HTTP1Request], timeout: TimeAmount) async -> [HTTP1Response] {
        guard !requests.isEmpty else { return [] }
        guard !closed.load(ordering: .relaxed) else { return requests.map { _ in .failed("ConnectionClosed") } }
        guard case .success(let sslContext) = self.sslContext else {
            return requests.map { _ in .failed("TLSConfigurationUnusable") }
        }
        // Group by host and shard: consecutive requests of a host go to its shards in turn.
        var groups: [HostKey: [Int]] = [:]
        var turn: [String: Int] = [:]
        for (index, request) in requests.enumerated() {
            let name = "\(request.host):\(request.port)"
            let next = turn[name, default: 0]
            turn[name] = next + 1
            groups[HostKey(host: request.host, port: request.port, shard: next % loops.count), default: []].append(index)
        }
        var futures: [EventLoopFuture<[(Int, HTTP1Response)]>] = []
        for (key, indices) in groups {
            guard let pool = await hostPool(key) else {
                for index in indices { futures.append(loops[0].makeSucceededFuture([(index, .failed("ConnectionClosed"))])) }
                continue
            }
            let loop = loops[key.shard]
            let promise = loop.makePromise(of: [HTTP1Response].self)
            let items = indices.map { requests[$0] }
            loop.execute {
                pool.value.submit(items, batch: HTTP1Batch(count: items.count, promise: promise), timeout: timeout)
            }
            futures.append(promise.futureResult.map { responses in Array(zip(indices, responses)) })
        }
        var responses = [HTTP1Response](repeating: .failed("ConnectionClosed"), count: requests.count)
        for future in futures {
            guard let answered = try? await future.get() else { continue }
            for (index, response) in answered { responses[index] = response }
        }
        return responses
    }

    /// The connections of a host on one event loop, made there on first use; `nil` once the pool is closed.
    private func hostPool(_ key: HostKey) async -> NIOLoopBound<HTTP1HostPool>? {
        if let pool = hosts.withLock({ $0[key] }) { return pool }
        let loop = loops[key.shard]
        let share = max(1, (settings.maximumConnectionsPerHost + loops.count - 1) / loops.count)
        let settings = self.settings
        guard case .success(let sslContext) = self.sslContext else { return nil }
        guard
            let made = try? await loop.submit({
                NIOLoopBound(
                    HTTP1HostPool(
                        host: key.host, port: key.port, maximumConnections: share, settings: settings,
                        sslContext: sslContext, loop: loop, opened: { [self] in self.opened.add(1, ordering: .relaxed) }),
                    eventLoop: loop)
            }).get()
        else { return nil }
        return hosts.withLock { hosts in
            if closed.load(ordering: .relaxed) { return nil }
            if let existing = hosts[key] { return existing }
            hosts[key] = made
            return made
        }
    }

    /// Closes every connection; later sends fail with `ConnectionClosed`.
    public func close() async {
        closed.store(true, ordering: .relaxed)
        let pools = hosts.withLock { hosts in
            defer { hosts.removeAll() }
            return Array(hosts.values)
        }
        for pool in pools {
            let loop = pool.eventLoop
            try? await loop.submit { pool.value.close() }.get()
        }
    }
}

/// The requests of one submission to a host pool and their answers so far. Confined to the pool's event loop.
final class HTTP1Batch {
    private var responses: [HTTP1Response?]
    private(set) var remaining: Int
    private let promise: EventLoopPromise<[HTTP1Response]>
    var deadline: Scheduled<Void>?

    init(count: Int, promise: EventLoopPromise<[HTTP1Response]>) {
        responses = Array(repeating: nil, count: count)
        remaining = count
        self.promise = promise
    }

    func isAnswered(_ index: Int) -> Bool { responses[index] != nil }

    func complete(_ index: Int, _ response: HTTP1Response) {
        guard responses[index] == nil else { return }
        responses[index] = response
        remaining -= 1
        if remaining == 0 {
            deadline?.cancel()
            deadline = nil
            promise.succeed(responses.map { $0! })
        }
    }
}

/// One host's connections on one event loop, and the requests waiting for one. Confined to that loop.
final class HTTP1HostPool {
    struct Waiting {
        var request: HTTP1Request
        var batch: HTTP1Batch
        var index: Int
    }

    let host: String
    let port: Int
    let maximumConnections: Int
    let settings: HTTP1ConnectionPool.Settings
    let sslContext: NIOSSLContext
    let loop: any EventLoop
    let opened: @Sendable () -> Void
    private var waiting = CircularBuffer<Waiting>()
    private var idle: [HTTP1ConnectionHandler] = []
    private var busy = Set<ObjectIdentifier>()
    private var all: [ObjectIdentifier: HTTP1ConnectionHandler] = [:]
    private var connecting = 0
    private var isClosed = false

    init(
        host: String, port: Int, maximumConnections: Int, settings: HTTP1ConnectionPool.Settings, sslContext: NIOSSLContext,
        loop: any EventLoop, opened: @escaping @Sendable () -> Void
    ) {
        self.host = host
        self.port = port
        self.maximumConnections = maximumConnections
        self.settings = settings
        self.sslContext = sslContext
        self.loop = loop
        self.opened = opened
    }

    func submit(_ requests: [HTTP1Request], batch: HTTP1Batch, timeout: TimeAmount) {
        guard !isClosed else {
            for index in requests.indices { batch.complete(index, .failed("ConnectionClosed")) }
            return
        }
        for (index, request) in requests.enumerated() { waiting.append(Waiting(request: request, batch: batch, index: index)) }
        batch.deadline = loop.assumeIsolated().scheduleTask(in: timeout) { [weak self, weak batch] in
            guard let self, let batch, batch.remaining > 0 else { return }
            self.expire(batch)
        }
        dispatch()
    }

    /// The next waiting request whose batch still waits for it.
    private func nextWaiting() -> Waiting? {
        while let next = waiting.popFirst() {
            if !next.batch.isAnswered(next.index) { return next }
        }
        return nil
    }

    /// Hands waiting requests to idle connections, and opens connections for the rest.
    private func dispatch() {
        while !waiting.isEmpty, let connection = idle.popLast() {
            guard connection.isUsable else {
                forget(connection)
                continue
            }
            guard let next = nextWaiting() else {
                idle.append(connection)
                break
            }
            busy.insert(ObjectIdentifier(connection))
            connection.send(next)
        }
        while waiting.count > connecting, all.count + connecting < maximumConnections {
            connect()
        }
    }

    private func connect() {
        connecting += 1
        opened()
        let isAddress = (try? SocketAddress(ipAddress: host, port: 0)) != nil
        let sslContext = self.sslContext
        let host = self.host
        let loopBound = NIOLoopBound(self, eventLoop: loop)
        ClientBootstrap(group: loop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(settings.connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: isAddress ? nil : host))
                    try sync.addHTTPClientHandlers()
                    try sync.addHandler(HTTP1ConnectionHandler(pool: loopBound.value))
                }
            }
            .connect(host: host, port: port)
            .whenComplete { result in
                let pool = loopBound.value
                pool.connecting -= 1
                switch result {
                case .success(let channel):
                    guard let handler = try? channel.pipeline.syncOperations.handler(type: HTTP1ConnectionHandler.self),
                        !pool.isClosed
                    else {
                        channel.close(promise: nil)
                        pool.dispatch()
                        return
                    }
                    pool.all[ObjectIdentifier(handler)] = handler
                    pool.becameIdle(handler)
                case .failure:
                    // With no connection open or opening, what waits cannot be sent now.
                    if pool.all.isEmpty && pool.connecting == 0 {
                        while let next = pool.waiting.popFirst() { next.batch.complete(next.index, .failed("ConnectFailed")) }
                    } else {
                        pool.dispatch()
                    }
                }
            }
    }

    /// A connection finished its request (or just opened) and may take the next.
    func becameIdle(_ connection: HTTP1ConnectionHandler) {
        busy.remove(ObjectIdentifier(connection))
        guard !isClosed, connection.isUsable else {
            forget(connection)
            dispatch()
            return
        }
        if let next = nextWaiting() {
            busy.insert(ObjectIdentifier(connection))
            connection.send(next)
        } else {
            idle.append(connection)
            connection.scheduleIdleClose(after: settings.idleTimeout)
        }
    }

    /// A connection closed.
    func closed(_ connection: HTTP1ConnectionHandler) {
        forget(connection)
        dispatch()
    }

    private func forget(_ connection: HTTP1ConnectionHandler) {
        let id = ObjectIdentifier(connection)
        all.removeValue(forKey: id)
        busy.remove(id)
        idle.removeAll { $0 === connection }
    }

    /// The batch's deadline passed: what still waits ends with `Timeout`, and connections busy with its requests
    /// are closed (an HTTP/1.1 request cannot be cancelled otherwise).
    private func expire(_ batch: HTTP1Batch) {
        var kept = CircularBuffer<Waiting>()
        while let next = waiting.popFirst() {
            if next.batch === batch { batch.complete(next.index, .failed("Timeout")) } else { kept.append(next) }
        }
        waiting = kept
        // A connection being closed no longer counts: new ones may open at once for other requests.
        let stuck = all.values.filter { $0.current?.batch === batch }
        for connection in stuck {
            connection.abandon("Timeout")
            forget(connection)
        }
        if !stuck.isEmpty { dispatch() }
    }

    func close() {
        isClosed = true
        while let next = waiting.popFirst() { next.batch.complete(next.index, .failed("ConnectionClosed")) }
        for connection in all.values { connection.abandon("ConnectionClosed") }
        all.removeAll()
        idle.removeAll()
        busy.removeAll()
    }
}

/// One keep-alive connection of an ``HTTP1HostPool``: one request at a time, its head and body in one flush, its
/// answer's status and headers kept and its body dropped. Confined to the pool's event loop.
final class HTTP1ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let pool: HTTP1HostPool
    private var context: ChannelHandlerContext?
    private(set) var current: HTTP1HostPool.Waiting?
    private var head: HTTPResponseHead?
    private var idleClose: Scheduled<Void>?
    private var isOpen = true

    init(pool: HTTP1HostPool) {
        self.pool = pool
    }

    var isUsable: Bool { isOpen && context?.channel.isActive == true }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    /// Writes a request; the pool hands one only to a usable connection, so a connection that closed in between
    /// ends it as `ConnectionClosed` (its own close then tells the pool).
    func send(_ waiting: HTTP1HostPool.Waiting) {
        idleClose?.cancel()
        idleClose = nil
        guard let context, isUsable else {
            waiting.batch.complete(waiting.index, .failed("ConnectionClosed"))
            return
        }
        current = waiting
        head = nil
        var requestHead = waiting.request.head
        requestHead.headers.replaceOrAdd(name: "Host", value: waiting.request.port == 443 ? pool.host : "\(pool.host):\(waiting.request.port)")
        requestHead.headers.replaceOrAdd(name: "Content-Length", value: String(waiting.request.body.readableBytes))
        context.write(wrapOutboundOut(.head(requestHead)), promise: nil)
        if waiting.request.body.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(waiting.request.body))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let received):
            // An interim answer (1xx) is not the answer.
            if received.status.code >= 200 { head = received }
        case .body:
            break
        case .end:
            guard let head else {
                // An answer without a head cannot be read: give up on the connection.
                abandon("ConnectionClosed")
                return
            }
            self.head = nil
            let keepAlive = head.isKeepAlive
            if let current {
                self.current = nil
                current.batch.complete(current.index, HTTP1Response(status: Int(head.status.code), headers: head.headers))
            }
            if !keepAlive {
                isOpen = false
                context.close(promise: nil)
            } else {
                pool.becameIdle(self)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        isOpen = false
        idleClose?.cancel()
        if let current {
            self.current = nil
            // The status decides: an answer whose body broke off still counts.
            if let head {
                current.batch.complete(current.index, HTTP1Response(status: Int(head.status.code), headers: head.headers))
            } else {
                current.batch.complete(current.index, .failed("ConnectionClosed"))
            }
        }
        pool.closed(self)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        isOpen = false
        context.close(promise: nil)
    }

    func scheduleIdleClose(after timeout: TimeAmount) {
        guard let context else { return }
        idleClose?.cancel()
        idleClose = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [weak self] in
            guard let self, self.current == nil else { return }
            self.isOpen = false
            self.context?.close(promise: nil)
        }
    }

    /// Ends the current request with `why` and closes the connection.
    func abandon(_ why: String) {
        isOpen = false
        if let current {
            self.current = nil
            current.batch.complete(current.index, .failed(why))
        }
        context?.close(promise: nil)
    }
}
