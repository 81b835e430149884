import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import WNS

/// The real WNS adapter against the real emulator (TLS on 127.0.0.1, port 0), through a real Dispatcher over an
/// in-memory SQLite store.
struct WNSHarness {
    let emulator: WNSEmulator
    let adapter: WNSAdapter
    let store: SQLInstallationStore
    let dispatcher: Dispatcher

    static let tls: EmulatorTLS = try! EmulatorTLS.generate()
    static let packageSID = "ms-app://s-1-15-2-test"
    static let clientSecret = "test-wns-secret"

    static let fast = DeliveryConfiguration(
        pageSize: 50, batchSize: 20, concurrency: 4, abandonAfterSeconds: 30, maximumAttempts: 3,
        initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.05)

    /// Runs `body` with a started emulator, an adapter pointed at it, a store and a dispatcher; stops them after.
    static func with<T: Sendable>(
        delivery: DeliveryConfiguration = fast,
        clock: any WallClock = SystemWallClock(),
        emulatorSettings: (inout WNSEmulator.Settings) -> Void = { _ in },
        adapterSettings: (inout WNSSettings) -> Void = { _ in },
        _ body: (WNSHarness) async throws -> T
    ) async throws -> T {
        var settings = WNSEmulator.Settings(packageSID: packageSID, clientSecret: clientSecret)
        emulatorSettings(&settings)
        let emulator = WNSEmulator(settings: settings, tls: tls, logger: Logger.forTest("wns-emulator"))
        try await emulator.start()
        var configuration = WNSSettings(
            packageSID: packageSID, clientSecret: clientSecret, tokenEndpoint: emulator.tokenEndpoint,
            additionalTrustRoots: [try tls.caCertificate()], allowedChannelHosts: ["127.0.0.1:\(emulator.port)"],
            maximumConnections: 8, maximumConcurrentRequests: 64, requestTimeout: .seconds(10))
        adapterSettings(&configuration)
        let adapter = WNSAdapter(configuration: configuration, clock: clock, logger: Logger.forTest("wns"))
        let store = try await SQLInstallationStore.open(storage: .memory, logger: Logger.forTest("store"))
        let dispatcher = Dispatcher(
            store: store, adapters: try AdapterSet([adapter]), configuration: delivery, logger: Logger.forTest("dispatcher"))
        let harness = WNSHarness(emulator: emulator, adapter: adapter, store: store, dispatcher: dispatcher)
        do {
            let result = try await body(harness)
            try await harness.close()
            return result
        } catch {
            try? await harness.close()
            throw error
        }
    }

    func close() async throws {
        try await adapter.shutdown()
        await emulator.stop()
        try await store.database.close()
    }

    /// Registers an installation on a new emulator channel (validated like the API does); returns its channel id.
    @discardableResult
    func register(
        _ id: String, tags: [String] = [], templates: [String: InstallationTemplate] = [:], channel: String? = nil
    ) async throws -> String {
        let channelID = channel ?? "ch-\(id)"
        let uri = emulator.createChannel(id: channelID)
        try adapter.validate(pushChannel: .handle(uri), platform: .wns)
        _ = try await store.upsert(
            Installation(
                installationID: id, platform: .wns, pushChannel: .handle(uri), tags: tags, templates: templates))
        return channelID
    }

    /// Dispatches a native `windows` notification to a tag expression (or everyone).
    func send(_ body: String, headers: NotificationHeaders = [:], to expression: String? = nil) async throws -> DispatchSummary {
        let audience: Audience = try expression.map { .tags(try TagExpression(parsing: $0)) } ?? .all
        let notification = Notification(format: .windows, body: body, headers: headers, audience: audience)
        try adapter.validate(notification: notification)
        // Expired channels are applied as the delivery worker would.
        return try await dispatcher.dispatch(notification) { try await self.store.apply($0.expiredChannels) }
    }

    /// Delivers directly with the adapter (no Dispatcher retries), to one channel.
    func deliver(_ body: String, headers: NotificationHeaders = [:], channel: String) async -> DeliveryResult {
        let delivery = Delivery(
            notificationID: "n", installationID: nil, platform: .wns,
            pushChannel: .handle(emulator.channelURI(id: channel)), format: .windows, payload: ByteBuffer(string: body),
            headers: headers)
        return await adapter.deliver([delivery])[0]
    }
}

enum Payloads {
    static let toast = #"<toast><visual><binding template="ToastGeneric"><text>Hello</text></binding></visual></toast>"#
    static let tile = #"<tile><visual><binding template="TileMedium"><text>Score 3-1</text></binding></visual></tile>"#
    static let badge = #"<badge value="7"/>"#
    static let raw = #"{"kind":"sync","id":42}"#
}
