import Foundation
import HMS
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator

/// A real HMS emulator on 127.0.0.1 (port 0), a real HMS adapter pointed at it, a real SQLite store and a real
/// Dispatcher.
struct HMSHarness: Sendable {
    let emulator: HMSEmulator
    let adapter: HMSAdapter
    let store: SQLInstallationStore
    let dispatcher: Dispatcher
    let ports: EmulatorPorts

    static let appID = "10000001"
    static let secret = "test-secret"
    static let tls = try! EmulatorTLS.generate()

    static let fast = DeliveryConfiguration(
        pageSize: 500, batchSize: 500, concurrency: 4, abandonAfterSeconds: 30, maximumAttempts: 3,
        initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.05)

    static var logger: Logger {
        var logger = Logger.forTest("hms-test")
        logger.logLevel = .warning
        return logger
    }

    /// A push token of the shape Push Kit issues.
    static func token(_ name: String) -> String { "IQAAAACy0" + name + String(repeating: "A", count: 40) }

    static func installation(_ id: String, tags: [String] = [], templates: [String: InstallationTemplate] = [:]) -> Installation {
        Installation(installationID: id, platform: .hms, pushChannel: .handle(token(id)), tags: tags, templates: templates)
    }

    func settings(secret: String = HMSHarness.secret, batchSize: Int = 1000, margin: Duration = .seconds(300)) -> HMSSettings {
        HMSSettings(
            appID: Self.appID, clientSecret: secret, tokenEndpoint: emulator.tokenEndpoint(port: ports.service),
            endpoint: emulator.endpoint(port: ports.service), caCertificatePEM: Self.tls.caCertificatePEM,
            batchSize: batchSize, maximumConcurrentRequests: 16, requestTimeout: .seconds(10), tokenRenewalMargin: margin)
    }

    static func with<T: Sendable>(
        accessTokenLifetime: Duration = .seconds(3600), batchSize: Int = 1000, _ body: @Sendable (HMSHarness) async throws -> T
    ) async throws -> T {
        let emulator = HMSEmulator(
            configuration: HMSEmulator.Configuration(appID: appID, clientSecret: secret, accessTokenLifetime: accessTokenLifetime),
            tls: tls, logger: logger)
        return try await RunningServices.with([emulator], logger: logger) {
            let ports = await emulator.ports()
            let store = try await SQLInstallationStore.open(storage: .memory, logger: logger)
            let settings = HMSSettings(
                appID: appID, clientSecret: secret, tokenEndpoint: emulator.tokenEndpoint(port: ports.service),
                endpoint: emulator.endpoint(port: ports.service), caCertificatePEM: tls.caCertificatePEM,
                batchSize: batchSize, maximumConcurrentRequests: 16, requestTimeout: .seconds(10))
            let adapter = try HMSAdapter(settings: settings, logger: logger)
            let dispatcher = Dispatcher(store: store, adapters: try AdapterSet([adapter]), configuration: fast, logger: logger)
            let harness = HMSHarness(emulator: emulator, adapter: adapter, store: store, dispatcher: dispatcher, ports: ports)
            let result: Result<T, any Error>
            do {
                result = .success(try await body(harness))
            } catch {
                result = .failure(error)
            }
            try? await adapter.shutdown()
            try? await store.database.close()
            return try result.get()
        }
    }

    /// Sends one notification through the dispatcher, applying expired channels as the worker would.
    func send(_ format: NotificationFormat, _ body: String, to audience: Audience = .all) async throws -> DispatchSummary {
        try await dispatcher.dispatch(NotificationHub.Notification(format: format, body: body, audience: audience)) {
            try await self.store.apply($0.expiredChannels)
        }
    }

    /// Delivers one payload straight through an adapter.
    func deliver(_ body: String, to tokens: [String], with adapter: HMSAdapter? = nil) async -> [DeliveryResult] {
        let deliveries = tokens.map {
            Delivery(
                notificationID: "n", installationID: nil, platform: .hms, pushChannel: .handle($0), format: .hms,
                payload: ByteBuffer(string: body), headers: [:])
        }
        return await (adapter ?? self.adapter).deliver(deliveries, context: .standalone())
    }
}
