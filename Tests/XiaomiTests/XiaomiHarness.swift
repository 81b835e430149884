import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Synchronization
import Xiaomi

/// A real Xiaomi emulator on 127.0.0.1 (port 0), a real Xiaomi adapter pointed at it, a real SQLite store and a
/// real Dispatcher.
struct XiaomiHarness: Sendable {
    let emulator: XiaomiEmulator
    let adapter: XiaomiAdapter
    let store: SQLInstallationStore
    let dispatcher: Dispatcher
    let ports: EmulatorPorts

    static let secret = "test-app-secret-0123456789=="
    static let packageName = "com.example.news"
    static let tls = try! EmulatorTLS.generate()

    static let fast = DeliveryConfiguration(
        pageSize: 500, batchSize: 500, concurrency: 4, abandonAfterSeconds: 30, maximumAttempts: 3,
        initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.05)

    static var logger: Logger {
        var logger = Logger.forTest("xiaomi-test")
        logger.logLevel = .warning
        return logger
    }

    /// A registration id of the shape Mi Push issues, with `/`, `+` and `=` in it (which travel percent-encoded).
    static func registrationID(_ name: String) -> String { "d//igwEhgBGCI2TG6lWqlK3+Vr1VdNj=" + name }

    static func installation(_ id: String, tags: [String] = [], templates: [String: InstallationTemplate] = [:]) -> Installation {
        Installation(installationID: id, platform: .xiaomi, pushChannel: .handle(registrationID(id)), tags: tags, templates: templates)
    }

    func settings(secret: String = XiaomiHarness.secret, batchSize: Int = 1000, packageNames: [String] = [XiaomiHarness.packageName]) -> XiaomiSettings {
        XiaomiSettings(
            appSecret: secret, packageNames: packageNames, endpoint: emulator.endpoint(port: ports.service),
            caCertificatePEM: Self.tls.caCertificatePEM, batchSize: batchSize, maximumConcurrentRequests: 16,
            requestTimeout: .seconds(10))
    }

    static func with<T: Sendable>(
        batchSize: Int = 1000, logger: Logger = XiaomiHarness.logger, _ body: @Sendable (XiaomiHarness) async throws -> T
    ) async throws -> T {
        let emulator = XiaomiEmulator(
            configuration: XiaomiEmulator.Configuration(appSecret: secret, packageNames: [packageName, "com.example.other"]),
            tls: tls, logger: logger)
        return try await RunningServices.with([emulator], logger: logger) {
            let ports = await emulator.ports()
            let store = try await SQLInstallationStore.open(storage: .memory, logger: logger)
            let settings = XiaomiSettings(
                appSecret: secret, packageNames: [packageName], endpoint: emulator.endpoint(port: ports.service),
                caCertificatePEM: tls.caCertificatePEM, batchSize: batchSize, maximumConcurrentRequests: 16,
                requestTimeout: .seconds(10))
            let adapter = try XiaomiAdapter(settings: settings, logger: logger)
            let dispatcher = Dispatcher(store: store, adapters: try AdapterSet([adapter]), configuration: fast, logger: logger)
            let harness = XiaomiHarness(emulator: emulator, adapter: adapter, store: store, dispatcher: dispatcher, ports: ports)
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
        try await dispatcher.dispatch(NotificationHub.Notification(format: format, body: body, audience: audience)) { checkpoint in
            try await self.store.apply(checkpoint.expiredChannels)
        }
    }

    /// Delivers one payload straight through an adapter.
    func deliver(
        _ body: String, to registrationIDs: [String], headers: NotificationHeaders = [:], with adapter: XiaomiAdapter? = nil,
        logger: Logger = XiaomiHarness.logger
    ) async -> [DeliveryResult] {
        let deliveries = registrationIDs.map {
            Delivery(
                notificationID: "n", installationID: nil, platform: .xiaomi, pushChannel: .handle($0), format: .xiaomi,
                payload: ByteBuffer(string: body), headers: headers)
        }
        return await (adapter ?? self.adapter).deliver(deliveries, context: .standalone(logger: logger))
    }
}
