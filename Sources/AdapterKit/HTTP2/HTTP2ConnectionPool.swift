import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Logging
import Synchronization

/// One HTTP/2 connection of an ``HTTP2ConnectionPool``.
public final class HTTP2Connection: Sendable {
    let channel: any Channel
    /// Its flags: usable, the server's stream limit, keep-alive acknowledgements.
    public let status: HTTP2ConnectionStatus
    private let handler: NIOLoopBound<HTTP2ClientHandler>

    init(channel: any Channel, handler: NIOLoopBound<HTTP2ClientHandler>, status: HTTP2ConnectionStatus) {
        self.channel = channel
        self.handler = handler
        self.status = status
    }

    /// Whether new requests may be sent on it.
    public var isUsable: Bool { channel.isActive && status.usable.load(ordering: .relaxed) }

    /// Sends requests on concurrent streams (as many as the server and the pool allow, the rest queued) and returns
    /// one response each, in order; never fails (failures are responses). Requests not answered by `timeout` end
    /// with the failure `Timeout` and their streams are reset.
    public func send(_ requests: [HTTP2Request], timeout: TimeAmount) async -> [HTTP2Response] {
        let promise = channel.eventLoop.makePromise(of: [HTTP2Response].self)
        let handler = self.handler
        channel.eventLoop.execute {
            handler.value.submit(requests, batch: HTTP2ClientBatch(count: requests.count, promise: promise), timeout: timeout)
        }
        return (try? await promise.futureResult.get()) ?? requests.map { _ in .failed(HTTP2Response.notSent) }
    }

    /// Closes it.
    public func close() async {
        try? await channel.close()
    }
}

/// A small, fixed pool of HTTP/2 connections to one server (TLS, ALPN `h2`), opened on first use and replaced after
/// GOAWAY or loss, each driven at frame level: a batch of requests goes out on concurrent streams in one flush and
/// comes back as one array, with no channel, task or promise per request. Platforms that take one request per device
/// (APNs, FCM) send through it.
public final class HTTP2ConnectionPool: Sendable {
    /// Where to connect and how.
    public struct Settings: Sendable {
        /// The server's host (a name is also sent as SNI).
        public var host: String
        /// Its port.
        public var port: Int
        /// Connections kept open.
        public var connections: Int
        /// Streams per connection at most (the server's `SETTINGS_MAX_CONCURRENT_STREAMS` may lower it).
        public var maximumStreams: Int
        /// Deadline of opening a connection.
        public var connectTimeout: TimeAmount
        /// Interval of keep-alive PINGs.
        public var pingInterval: TimeAmount
        /// A PING not acknowledged within this time closes the connection.
        public var pingTimeout: TimeAmount
        /// An extra CA to trust (PEM), for an emulator.
        public var caCertificatePEM: String?
        /// Bytes of each response body kept (error bodies are small; the rest is dropped).
        public var maximumBodyBytes: Int
        /// The certificate chain (leaf first) and private key this client authenticates with in the TLS handshake
        /// (APNs' certificate-based authentication); `nil` for none.
        public var clientCertificate: (chain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey)?

        /// Creates settings.
        public init(
            host: String, port: Int, connections: Int, maximumStreams: Int, connectTimeout: TimeAmount,
            pingInterval: TimeAmount, pingTimeout: TimeAmount, caCertificatePEM: String? = nil,
            maximumBodyBytes: Int = 4096,
            clientCertificate: (chain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey)? = nil
        ) {
            self.host = host
            self.port = port
            self.connections = connections
            self.maximumStreams = maximumStreams
            self.connectTimeout = connectTimeout
            self.pingInterval = pingInterval
            self.pingTimeout = pingTimeout
            self.caCertificatePEM = caCertificatePEM
            self.maximumBodyBytes = maximumBodyBytes
            self.clientCertificate = clientCertificate
        }
    }

    private enum Slot {
        case empty
        case connecting(EventLoopFuture<HTTP2Connection>)
        case ready(HTTP2Connection)
    }

    /// The settings.
    public let settings: Settings
    private let sslContext: NIOSSLContext
    /// The event loops connections open on; `nil` for the platform event loops, started only when a connection
    /// opens (an adapter built to check a configuration starts no threads).
    private let group: (any EventLoopGroup)?
    private let slots: Mutex<[Slot]>
    private let next = Atomic<Int>(0)
    private let opened = Atomic<Int>(0)

    /// Creates a pool; no connection opens before the first ``connection()``. Throws when the CA is not PEM or the
    /// client certificate's key does not match it.
    public init(settings: Settings, group: (any EventLoopGroup)? = nil) throws {
        self.settings = settings
        self.group = group
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        if let pem = settings.caCertificatePEM {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        }
        if let client = settings.clientCertificate {
            tls.certificateChain = client.chain.map { .certificate($0) }
            tls.privateKey = .privateKey(client.privateKey)
        }
        self.sslContext = try SharedTLSContexts.context(for: tls)
        self.slots = Mutex(Array(repeating: .empty, count: max(1, settings.connections)))
    }

    /// Connections opened so far (reconnects included).
    public var connectionsOpened: Int { opened.load(ordering: .relaxed) }

    /// Keep-alive PINGs acknowledged on the open connections.
    public var pingsAcknowledged: Int {
        slots.withLock { slots in
            slots.reduce(0) { sum, slot in
                if case .ready(let connection) = slot { sum + connection.status.pingsAcknowledged.load(ordering: .relaxed) } else { sum }
            }
        }
    }

    /// The server's current stream limits of the open connections.
    public var remoteStreamLimits: [Int] {
        slots.withLock { slots in
            slots.compactMap { if case .ready(let connection) = $0 { connection.status.remoteMaximumStreams.load(ordering: .relaxed) } else { nil } }
        }
    }

    /// The next connection in turn, opening or replacing it when needed.
    public func connection() async throws -> HTTP2Connection {
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue % settings.connections
        let future: EventLoopFuture<HTTP2Connection> = slots.withLock { slots in
            switch slots[index] {
            case .ready(let connection) where connection.isUsable:
                return connection.channel.eventLoop.makeSucceededFuture(connection)
            case .connecting(let future):
                return future
            case .ready, .empty:
                let future = connect()
                slots[index] = .connecting(future)
                future.whenComplete { [self] result in
                    self.slots.withLock { current in
                        guard case .connecting(let pending) = current[index], pending === future else { return }
                        switch result {
                        case .success(let connection): current[index] = .ready(connection)
                        case .failure: current[index] = .empty
                        }
                    }
                }
                return future
            }
        }
        return try await future.get()
    }

    private func connect() -> EventLoopFuture<HTTP2Connection> {
        let settings = self.settings
        let sslContext = self.sslContext
        let status = HTTP2ConnectionStatus()
        let isAddress = (try? SocketAddress(ipAddress: settings.host, port: 0)) != nil
        opened.add(1, ordering: .relaxed)
        return ClientBootstrap(group: group ?? PlatformEventLoops.shared)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(settings.connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: isAddress ? nil : settings.host))
                    let coalescer = WriteCoalescingHandler()
                    try sync.addHandler(coalescer)
                    try sync.addHandler(
                        NIOHTTP2Handler(
                            mode: .client,
                            initialSettings: [
                                HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
                                HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
                                HTTP2Setting(parameter: .enablePush, value: 0),
                            ],
                            // Adapters build every header block themselves from validated values.
                            headerBlockValidation: .disabled,
                            contentLengthValidation: .disabled))
                    try sync.addHandler(
                        HTTP2ClientHandler(
                            maximumStreams: settings.maximumStreams, pingInterval: settings.pingInterval,
                            pingTimeout: settings.pingTimeout, status: status, coalescer: coalescer,
                            maximumBodyBytes: settings.maximumBodyBytes))
                }
            }
            .connect(host: settings.host, port: settings.port)
            .flatMapThrowing { channel in
                let handler = try channel.pipeline.syncOperations.handler(type: HTTP2ClientHandler.self)
                return HTTP2Connection(channel: channel, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop), status: status)
            }
    }

    /// Sends requests spread over the pool's connections, in chunks of at most ``Settings/maximumStreams`` each on
    /// the next connection in turn, so that one large batch fills every connection's streams instead of queueing on
    /// one; returns one response each, in order. A connection that cannot be opened answers its chunk with the
    /// failure `ConnectFailed`, logged once per chunk with `platform` as `push.platform`.
    public func send(
        _ requests: [HTTP2Request], timeout: TimeAmount, logger: Logger, platform: String
    ) async -> [HTTP2Response] {
        let chunk = max(1, settings.maximumStreams)
        @Sendable func sendChunk(_ requests: ArraySlice<HTTP2Request>) async -> [HTTP2Response] {
            do {
                return try await connection().send(Array(requests), timeout: timeout)
            } catch {
                logger.warning(
                    "cannot connect to the platform", metadata: ["push.platform": "\(platform)", "error": "\(error)"])
                return requests.map { _ in .failed("ConnectFailed") }
            }
        }
        guard requests.count > chunk else { return await sendChunk(requests[...]) }
        return await withTaskGroup(of: (Int, [HTTP2Response]).self) { group in
            for start in stride(from: 0, to: requests.count, by: chunk) {
                let slice = requests[start..<min(start + chunk, requests.count)]
                group.addTask { (start, await sendChunk(slice)) }
            }
            var responses = [HTTP2Response](repeating: .failed(HTTP2Response.notSent), count: requests.count)
            for await (start, answers) in group {
                responses.replaceSubrange(start..<start + answers.count, with: answers)
            }
            return responses
        }
    }

    /// Closes every connection.
    public func close() async {
        let connections: [HTTP2Connection] = slots.withLock { slots in
            defer { slots = Array(repeating: .empty, count: slots.count) }
            return slots.compactMap { if case .ready(let connection) = $0 { connection } else { nil } }
        }
        for connection in connections { await connection.close() }
    }
}
