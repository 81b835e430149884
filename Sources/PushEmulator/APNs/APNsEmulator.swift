import AdapterKit
import Foundation
import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization

/// A strict local APNs provider API: HTTP/2 over TLS, token-based authentication, APNs' header and payload rules,
/// status codes and reasons. It records what it accepted and every rule a request broke, and injects faults.
///
/// Built on swift-nio-http2 at frame level so it can serve as the target of throughput benchmarks. The admin API is
/// served on the same port under `/_emulator/` (see ``admin(method:path:body:)``); the same operations are available
/// in process.
///
/// It serves the production environment on ``APNsEmulatorConfiguration/port`` and, with
/// ``APNsEmulatorConfiguration/sandboxPort``, the sandbox environment on a second listener, as Apple serves them on
/// two hosts. Each device token belongs to one environment (``registerDevice(_:in:)``); the other environment
/// answers it `BadDeviceToken`, and a key restricted to one environment is answered `BadEnvironmentKeyIdInToken` by
/// the other.
///
/// ```swift
/// let emulator = APNsEmulator(configuration: configuration, tls: try EmulatorTLS.generate(), logger: logger)
/// let port = try await emulator.start()
/// // … send …
/// #expect(emulator.received.count == 1)
/// await emulator.stop()
/// ```
public final class APNsEmulator: PlatformEmulator, Sendable {
    public let name = "apns"
    /// The emulator's settings.
    public let configuration: APNsEmulatorConfiguration
    let rules: APNsRequestRules
    let broadcastRules: APNsBroadcastRules
    private let tls: EmulatorTLS
    private let logger: Logger
    private let group: any EventLoopGroup
    private let server = Mutex<(listeners: [APNsEmulatorEnvironment: any Channel], connections: [ObjectIdentifier: any Channel])>(([:], [:]))
    /// The channel management listeners, by environment.
    private let managementListeners = Mutex<[APNsEmulatorEnvironment: any Channel]>([:])
    private let peakConcurrency = Atomic<Int>(0)
    private let connectionsOpened = Atomic<Int>(0)

    /// Creates an emulator; ``start()`` or ``run()`` binds it.
    public init(
        configuration: APNsEmulatorConfiguration, tls: EmulatorTLS, logger: Logger,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.configuration = configuration
        self.rules = APNsRequestRules(configuration: configuration)
        self.broadcastRules = APNsBroadcastRules(rules: rules)
        self.tls = tls
        self.logger = logger
        self.group = group
    }

    /// The recorder of accepted notifications, violations and injected faults.
    public var recorder: EmulatorRecorder<APNsReceivedNotification> { rules.recorder }

    /// Binds the ports (once) and returns the production listener's.
    @discardableResult
    public func start() async throws -> Int {
        if let channel = server.withLock({ $0.listeners[.production] }), let port = channel.localAddress?.port { return port }
        var serverTLS = try tls.serverConfiguration(applicationProtocols: ["h2"])
        let checker = try configuration.clientCertificates.map {
            try APNsClientCertificateChecker(configuration: $0, clock: configuration.clock)
        }
        if let checker {
            // Asks every client for a certificate; the checker decides what one means (APNsEmulatorClientCertificates).
            serverTLS.certificateVerification = .optionalVerification
            serverTLS.trustRoots = .certificates(try checker.trustRoots())
        }
        let sslContext = try NIOSSLContext(configuration: serverTLS)
        let production = try await listen(on: configuration.port, environment: .production, sslContext: sslContext, checker: checker)
        server.withLock { $0.listeners[.production] = production }
        if let sandboxPort = configuration.sandboxPort {
            do {
                let sandbox = try await listen(on: sandboxPort, environment: .sandbox, sslContext: sslContext, checker: checker)
                server.withLock { $0.listeners[.sandbox] = sandbox }
            } catch {
                await stop()
                throw error
            }
        }
        let management: [(APNsEmulatorEnvironment, Int?)] = [
            (.production, configuration.managementPort), (.sandbox, configuration.sandboxManagementPort),
        ]
        for case (let environment, let port?) in management {
            do {
                let listener = try await listen(
                    on: port, environment: environment, sslContext: sslContext, checker: checker, role: .management)
                managementListeners.withLock { $0[environment] = listener }
            } catch {
                await stop()
                throw error
            }
        }
        return production.localAddress?.port ?? configuration.port
    }

    private func listen(
        on port: Int, environment: APNsEmulatorEnvironment, sslContext: NIOSSLContext, checker: APNsClientCertificateChecker?,
        role: APNsListenerRole = .push
    ) async throws -> any Channel {
        let initialStreams = configuration.initialConcurrentStreams
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    let certificate = checker.map { _ in APNsConnectionCertificate() }
                    if let checker, let certificate {
                        try sync.addHandler(checker.serverHandler(context: sslContext, connection: certificate))
                    } else {
                        try sync.addHandler(NIOSSLServerHandler(context: sslContext))
                    }
                    // The answers of one flush leave in as few TLS records as their size needs, as from a server
                    // that writes what is ready together.
                    try sync.addHandler(WriteCoalescingHandler())
                    try sync.addHandler(
                        NIOHTTP2Handler(
                            mode: .server,
                            initialSettings: [
                                HTTP2Setting(parameter: .maxConcurrentStreams, value: initialStreams),
                                HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
                                HTTP2Setting(parameter: .maxHeaderListSize, value: 64 << 10),
                            ]))
                    try sync.addHandler(
                        APNsServerConnectionHandler(emulator: self, environment: environment, certificate: certificate, role: role))
                    self.track(channel)
                }
            }
            .bind(host: configuration.host, port: port)
            .get()
        logger.info(
            "APNs emulator listening",
            metadata: [
                "emulator.port": "\(channel.localAddress?.port ?? port)", "apns.environment": "\(environment)",
                "apns.listener": "\(role)",
            ])
        return channel
    }

    /// The production listener's bound port, once started.
    public var port: Int? { port(of: .production) }

    /// The bound port of an environment's listener, once started (`nil` for sandbox without ``APNsEmulatorConfiguration/sandboxPort``).
    public func port(of environment: APNsEmulatorEnvironment) -> Int? {
        server.withLock { $0.listeners[environment]?.localAddress?.port }
    }

    /// The bound port of an environment's channel management listener, once started (`nil` when not configured).
    public func managementPort(of environment: APNsEmulatorEnvironment) -> Int? {
        managementListeners.withLock { $0[environment]?.localAddress?.port }
    }

    /// Serves until graceful shutdown.
    public func run() async throws {
        try await start()
        try? await gracefulShutdown()
        await stop()
    }

    /// Closes the listening socket and every connection.
    public func stop() async {
        let (listeners, connections) = server.withLock { state in
            defer { state = ([:], [:]) }
            return (Array(state.listeners.values), Array(state.connections.values))
        }
        let managers = managementListeners.withLock { listeners in
            defer { listeners = [:] }
            return Array(listeners.values)
        }
        for listener in listeners + managers { try? await listener.close() }
        for connection in connections { try? await connection.close() }
    }

    private func track(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        server.withLock { $0.connections[id] = channel }
        connectionsOpened.add(1, ordering: .relaxed)
        channel.closeFuture.whenComplete { [self] _ in _ = server.withLock { $0.connections.removeValue(forKey: id) } }
    }

    func observeConcurrency(_ value: Int) {
        _ = peakConcurrency.max(value, ordering: .relaxed)
    }

    // MARK: In-process control

    /// Notifications accepted so far (most recent last).
    public var received: [APNsReceivedNotification] { recorder.accepted }
    /// How many notifications were accepted (keeps counting past the record capacity).
    public var acceptedCount: Int { recorder.acceptedCount }
    /// Rules broken by requests, e.g. `BadPriority: background push with priority 10`.
    public var violations: [String] { recorder.violations }
    /// Faults injected into answers.
    public var faults: FaultInjection {
        get { recorder.faults }
        set { recorder.faults = newValue }
    }
    /// The most streams seen open at once on one connection.
    public var peakConcurrentStreams: Int { peakConcurrency.load(ordering: .relaxed) }
    /// Connections accepted since start.
    public var connectionsAccepted: Int { connectionsOpened.load(ordering: .relaxed) }
    /// Connections open now.
    public var openConnections: Int { server.withLock { $0.connections.count } }

    /// Requests the listener of an environment answered (admin requests aside), since start or ``reset()``.
    public func requestCount(in environment: APNsEmulatorEnvironment) -> Int { rules.requests(in: environment) }

    /// Registers the environment a device token belongs to (`nil`: forget it, so it belongs to
    /// ``APNsEmulatorConfiguration/unregisteredTokenEnvironment``). The other environment answers it `BadDeviceToken`.
    public func registerDevice(_ deviceToken: String, in environment: APNsEmulatorEnvironment?) {
        rules.registerDevice(deviceToken, in: environment)
    }

    /// Clears records, faults, device states and registrations, and statistics.
    public func reset() {
        recorder.reset()
        recorder.faults = .none
        rules.clearDevices()
        rules.clearCounts()
        rules.expireProviderTokens(issuedAtOrBefore: .distantPast)
        broadcastRules.reset()
        peakConcurrency.store(0, ordering: .relaxed)
    }

    // MARK: Broadcast channels

    /// Broadcasts accepted so far (most recent last), kept up to the record capacity.
    public var broadcasts: [APNsReceivedBroadcast] { broadcastRules.broadcasts.accepted }
    /// How many broadcasts were accepted (keeps counting past the record capacity).
    public var broadcastCount: Int { broadcastRules.broadcasts.acceptedCount }

    /// The channels held in an environment (every environment when `nil`), ordered by id.
    public func channels(in environment: APNsEmulatorEnvironment? = nil) -> [APNsEmulatorChannel] {
        broadcastRules.channels(in: environment)
    }

    /// Creates a channel directly, as a management request would (tests, benchmarks).
    public func createChannel(
        bundleID: String, in environment: APNsEmulatorEnvironment = .production, messageStoragePolicy: Int = 0
    ) -> APNsEmulatorChannel {
        broadcastRules.createChannel(bundleID: bundleID, environment: environment, messageStoragePolicy: messageStoragePolicy)
    }

    /// Deletes a channel directly, as if its app deleted it elsewhere; returns whether it existed.
    @discardableResult
    public func deleteChannel(id: String) -> Bool { broadcastRules.deleteChannel(id: id) }

    /// Requests an environment's channel management listener answered, since start or ``reset()``.
    public func managementRequestCount(in environment: APNsEmulatorEnvironment) -> Int {
        broadcastRules.managementRequestCount(in: environment)
    }

    /// Broadcast requests (`/4/broadcasts/…`) an environment's push listener answered, since start or ``reset()``.
    public func broadcastRequestCount(in environment: APNsEmulatorEnvironment) -> Int {
        broadcastRules.broadcastRequestCount(in: environment)
    }

    /// Sets how the emulator answers for a device token (`nil`: active again), for the next `times` requests to
    /// it or until changed.
    public func setDevice(_ deviceToken: String, _ state: APNsDeviceState?, times: Int? = nil) {
        rules.setDevice(deviceToken, state, times: times)
    }

    /// Makes every provider token issued at or before `date` answer `ExpiredProviderToken`.
    public func expireProviderTokens(issuedAtOrBefore date: Date) {
        rules.expireProviderTokens(issuedAtOrBefore: date)
    }

    /// Sends GOAWAY on every open connection and closes them shortly after.
    public func goAway() { broadcast(.goAway) }

    /// Closes every open connection abruptly.
    public func dropConnections() { broadcast(.drop) }

    private func broadcast(_ command: APNsEmulatorCommand) {
        for channel in server.withLock({ Array($0.connections.values) }) {
            channel.pipeline.fireUserInboundEventTriggered(command)
        }
    }

    // MARK: Admin API

    /// Answers an admin request under `/_emulator/`:
    ///
    /// - `GET /_emulator/received`: accepted notifications as a JSON array, most recent last.
    /// - `GET /_emulator/violations`: broken rules as a JSON array of strings.
    /// - `GET /_emulator/broadcasts`: accepted broadcasts as a JSON array, most recent last.
    /// - `GET /_emulator/channels`: the channels held, every environment, as a JSON array.
    /// - `GET /_emulator/stats`: counts (accepted, violations, connections, peak concurrent streams, and requests per
    ///   environment: `"requests":{"production":3,"sandbox":1}`).
    /// - `POST /_emulator/reset`: clears records, faults, device states and registrations.
    /// - `POST /_emulator/faults` with a JSON body `{"serverErrorRate":0,"unavailableRate":0,"throttleRate":0,
    ///   "retryAfterSeconds":1,"latencyMilliseconds":0,"dropConnectionRate":0}`.
    /// - `POST /_emulator/devices/<token>` with `{"state":"unregistered"|"ended"|"expired"|"bad"|"notForTopic"|"active",
    ///   "timestamp":<ms>}` or `{"status":400,"reason":"BadCollapseId"}`, and/or `{"environment":"production"|
    ///   "sandbox"}` to register the environment the token belongs to.
    /// - `POST /_emulator/goaway`, `POST /_emulator/drop`: GOAWAY or drop every connection.
    func admin(method: String, path: String, body: ByteBuffer?) -> (Int, ByteBuffer) {
        let route = path.split(separator: "?").first.map(String.init) ?? path
        let json = body.flatMap { try? JSONValue(parsing: $0.readableBytesView) }?.objectValue ?? [:]
        func number(_ key: String) -> Double? {
            if case .number(let value)? = json[key] { return value }
            return nil
        }
        switch (method, route) {
        case ("GET", "/_emulator/received"):
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            encoder.outputFormatting = [.sortedKeys]
            return (200, ByteBuffer(bytes: (try? encoder.encode(received)) ?? Data("[]".utf8)))
        case ("GET", "/_emulator/broadcasts"):
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            // Channel ids are base64: written as they are sent, without escaping their slashes.
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return (200, ByteBuffer(bytes: (try? encoder.encode(broadcasts)) ?? Data("[]".utf8)))
        case ("GET", "/_emulator/channels"):
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return (200, ByteBuffer(bytes: (try? encoder.encode(channels())) ?? Data("[]".utf8)))
        case ("GET", "/_emulator/violations"):
            return (200, ByteBuffer(string: JSONValue.array(violations.map { .string($0) }).jsonString()))
        case ("GET", "/_emulator/stats"):
            let stats: JSONValue = [
                "accepted": .number(Double(acceptedCount)), "violations": .number(Double(violations.count)),
                "openConnections": .number(Double(openConnections)), "connectionsAccepted": .number(Double(connectionsAccepted)),
                "peakConcurrentStreams": .number(Double(peakConcurrentStreams)),
                "broadcasts": .number(Double(broadcastCount)), "channels": .number(Double(channels().count)),
                "requests": .object(
                    Dictionary(uniqueKeysWithValues: APNsEmulatorEnvironment.allCases.map { ($0.rawValue, .number(Double(requestCount(in: $0)))) })),
            ]
            return (200, ByteBuffer(string: stats.jsonString()))
        case ("POST", "/_emulator/reset"):
            reset()
            return (200, ByteBuffer(string: "{}"))
        case ("POST", "/_emulator/faults"):
            faults = FaultInjection(adminSettings: json)
            return (200, ByteBuffer(string: "{}"))
        case ("POST", "/_emulator/goaway"):
            goAway()
            return (200, ByteBuffer(string: "{}"))
        case ("POST", "/_emulator/drop"):
            dropConnections()
            return (200, ByteBuffer(string: "{}"))
        case ("POST", _) where route.hasPrefix("/_emulator/devices/"):
            let token = String(route.dropFirst("/_emulator/devices/".count))
            var registered: APNsEmulatorEnvironment?
            if let value = json["environment"] {
                guard let name = value.stringValue, let environment = APNsEmulatorEnvironment(rawValue: name) else {
                    return (400, ByteBuffer(string: #"{"error":"environment must be production or sandbox"}"#))
                }
                registered = environment
            }
            if let registered, json["state"] == nil, json["status"] == nil {
                registerDevice(token, in: registered)
                return (200, ByteBuffer(string: "{}"))
            }
            var date = configuration.clock.now()
            if json["timestamp"] != nil {
                // Answers carry it as whole milliseconds: a value no answer can hold is refused here.
                guard let milliseconds = number("timestamp"), (0...253_402_300_799_000).contains(milliseconds) else {
                    return (400, ByteBuffer(string: #"{"error":"timestamp must be milliseconds since 1970, up to the year 9999"}"#))
                }
                date = Date(timeIntervalSince1970: milliseconds / 1000)
            }
            let state: APNsDeviceState?
            switch json["state"]?.stringValue {
            case "unregistered": state = .unregistered(date)
            // An ended Live Activity's update token: APNs answers it 410 Unregistered, as a removed app's token.
            case "ended": state = .unregistered(date)
            case "expired": state = .expired(date)
            case "bad": state = .bad
            case "notForTopic": state = .notForTopic
            case "active": state = nil
            default:
                guard let status = number("status"), (100...599).contains(status), let reason = json["reason"]?.stringValue else {
                    return (400, ByteBuffer(string: #"{"error":"give state (unregistered, ended, expired, bad, notForTopic, active) or status (100 to 599) and reason"}"#))
                }
                state = .reply(status: Int(status), reason: reason)
            }
            if let registered { registerDevice(token, in: registered) }
            setDevice(token, state)
            return (200, ByteBuffer(string: "{}"))
        default:
            return (404, ByteBuffer(string: #"{"error":"unknown emulator endpoint"}"#))
        }
    }
}
