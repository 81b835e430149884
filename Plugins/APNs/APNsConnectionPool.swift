import AdapterKit
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// Parses APNs error bodies: `{"reason": "...", "timestamp": 1700000000000}`.
enum APNsResponseBody {
    static func parse(_ body: ByteBuffer) -> (reason: String?, timestamp: Int64?) {
        guard let object = (try? JSONValue(parsing: body.readableBytesView))?.objectValue else { return (nil, nil) }
        var timestamp: Int64?
        if case .number(let value)? = object["timestamp"] { timestamp = PlatformNumber.int64(value) }
        return (object["reason"]?.stringValue, timestamp)
    }
}

/// One HTTP/2 connection to APNs.
final class APNsConnection: Sendable {
    let channel: any Channel
    let status: APNsConnectionStatus
    private let handler: NIOLoopBound<APNsClientHandler>

    init(channel: any Channel, handler: NIOLoopBound<APNsClientHandler>, status: APNsConnectionStatus) {
        self.channel = channel
        self.handler = handler
        self.status = status
    }

    /// Whether new requests may be sent on it.
    var isUsable: Bool { channel.isActive && status.usable.load(ordering: .relaxed) }

    /// Sends requests and returns one response each, in order; never fails (failures are responses).
    func send(_ requests: [APNsRequest], timeout: TimeAmount) async -> [APNsResponse] {
        let promise = channel.eventLoop.makePromise(of: [APNsResponse].self)
        let handler = self.handler
        channel.eventLoop.execute {
            handler.value.submit(requests, batch: APNsClientBatch(count: requests.count, promise: promise), timeout: timeout)
        }
        return (try? await promise.futureResult.get()) ?? requests.map { _ in .failed(APNsResponse.notSent) }
    }

    /// Closes it.
    func close() async {
        try? await channel.close()
    }
}

/// A small, fixed pool of APNs connections, opened on first use and replaced after GOAWAY or loss.
final class APNsConnectionPool: Sendable {
    struct Settings: Sendable {
        var host: String
        var port: Int
        var connections: Int
        var maximumStreams: Int
        var connectTimeout: TimeAmount
        var pingInterval: TimeAmount
        var pingTimeout: TimeAmount
        var caCertificatePEM: String?
    }

    private enum Slot {
        case empty
        case connecting(EventLoopFuture<APNsConnection>)
        case ready(APNsConnection)
    }

    let settings: Settings
    private let sslContext: NIOSSLContext
    /// The event loops connections open on; `nil` for the platform event loops, started only when a connection
    /// opens (an adapter built to check a configuration starts no threads).
    private let group: (any EventLoopGroup)?
    private let slots: Mutex<[Slot]>
    private let next = Atomic<Int>(0)
    private let opened = Atomic<Int>(0)

    init(settings: Settings, group: (any EventLoopGroup)? = nil) throws {
        self.settings = settings
        self.group = group
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        if let pem = settings.caCertificatePEM {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        }
        self.sslContext = try NIOSSLContext(configuration: tls)
        self.slots = Mutex(Array(repeating: .empty, count: max(1, settings.connections)))
    }

    /// Connections opened so far (reconnects included).
    var connectionsOpened: Int { opened.load(ordering: .relaxed) }

    /// Keep-alive PINGs acknowledged on the open connections.
    var pingsAcknowledged: Int {
        slots.withLock { slots in
            slots.reduce(0) { sum, slot in
                if case .ready(let connection) = slot { sum + connection.status.pingsAcknowledged.load(ordering: .relaxed) } else { sum }
            }
        }
    }

    /// The server's current stream limits of the open connections.
    var remoteStreamLimits: [Int] {
        slots.withLock { slots in
            slots.compactMap { if case .ready(let connection) = $0 { connection.status.remoteMaximumStreams.load(ordering: .relaxed) } else { nil } }
        }
    }

    /// The next connection in turn, opening or replacing it when needed.
    func connection() async throws -> APNsConnection {
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue % settings.connections
        let future: EventLoopFuture<APNsConnection> = slots.withLock { slots in
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

    private func connect() -> EventLoopFuture<APNsConnection> {
        let settings = self.settings
        let sslContext = self.sslContext
        let status = APNsConnectionStatus()
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
                            // The adapter builds every header block itself from validated values.
                            headerBlockValidation: .disabled,
                            contentLengthValidation: .disabled))
                    try sync.addHandler(
                        APNsClientHandler(
                            maximumStreams: settings.maximumStreams, pingInterval: settings.pingInterval,
                            pingTimeout: settings.pingTimeout, status: status, coalescer: coalescer))
                }
            }
            .connect(host: settings.host, port: settings.port)
            .flatMapThrowing { channel in
                let handler = try channel.pipeline.syncOperations.handler(type: APNsClientHandler.self)
                return APNsConnection(channel: channel, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop), status: status)
            }
    }

    /// Closes every connection.
    func close() async {
        let connections: [APNsConnection] = slots.withLock { slots in
            defer { slots = Array(repeating: .empty, count: slots.count) }
            return slots.compactMap { if case .ready(let connection) = $0 { connection } else { nil } }
        }
        for connection in connections { await connection.close() }
    }
}
