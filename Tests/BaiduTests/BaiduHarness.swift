import Baidu
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Synchronization

/// A real Baidu emulator on 127.0.0.1 (port 0), a real Baidu adapter pointed at it, a real SQLite store and a real
/// Dispatcher.
struct BaiduHarness: Sendable {
    let emulator: BaiduEmulator
    let adapter: BaiduAdapter
    let store: SQLInstallationStore
    let dispatcher: Dispatcher
    let ports: EmulatorPorts

    static let apiKey = "Ljc710pzAa99GULCo8y48NvB"
    static let secret = "test-secret-key-0123456789"
    static let tls = try! EmulatorTLS.generate()

    static let fast = DeliveryConfiguration(
        pageSize: 500, batchSize: 500, concurrency: 4, abandonAfterSeconds: 30, maximumAttempts: 3,
        initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.05)

    static var logger: Logger {
        var logger = Logger.forTest("baidu-test")
        logger.logLevel = .warning
        return logger
    }

    /// The channel id of a test device (digits, as Baidu issues them).
    static func channelID(_ number: Int) -> String { String(3_748_092_266_370_017_000 + number) }
    /// The push channel of a test device: Azure's `{userId}-{channelId}`.
    static func handle(_ number: Int) -> String { "1061541468263391\(number)-\(channelID(number))" }

    static func installation(_ id: String, number: Int, tags: [String] = [], templates: [String: InstallationTemplate] = [:]) -> Installation {
        Installation(installationID: id, platform: .baidu, pushChannel: .handle(handle(number)), tags: tags, templates: templates)
    }

    func settings(
        secret: String = BaiduHarness.secret, deviceType: BaiduSettings.DeviceType = .android, batchSize: Int = 1
    ) -> BaiduSettings {
        BaiduSettings(
            apiKey: Self.apiKey, secretKey: secret, deviceType: deviceType, endpoint: emulator.endpoint(port: ports.service),
            caCertificatePEM: Self.tls.caCertificatePEM, batchSize: batchSize, maximumConcurrentRequests: 16,
            requestTimeout: .seconds(10))
    }

    static func with<T: Sendable>(
        deviceType: BaiduSettings.DeviceType = .android, batchSize: Int = 1, acceptsUnknownChannels: Bool = true,
        logger: Logger = BaiduHarness.logger, _ body: @Sendable (BaiduHarness) async throws -> T
    ) async throws -> T {
        let emulator = BaiduEmulator(
            configuration: BaiduEmulator.Configuration(
                apiKey: apiKey, secretKey: secret, deviceType: deviceType.rawValue, acceptsUnknownChannels: acceptsUnknownChannels),
            tls: tls, logger: logger)
        return try await RunningServices.with([emulator], logger: logger) {
            let ports = await emulator.ports()
            let store = try await SQLInstallationStore.open(storage: .memory, logger: logger)
            let settings = BaiduSettings(
                apiKey: apiKey, secretKey: secret, deviceType: deviceType, endpoint: emulator.endpoint(port: ports.service),
                caCertificatePEM: tls.caCertificatePEM, batchSize: batchSize, maximumConcurrentRequests: 16,
                requestTimeout: .seconds(10))
            let adapter = try BaiduAdapter(settings: settings, logger: logger)
            let dispatcher = Dispatcher(store: store, adapters: try AdapterSet([adapter]), configuration: fast, logger: logger)
            let harness = BaiduHarness(emulator: emulator, adapter: adapter, store: store, dispatcher: dispatcher, ports: ports)
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
    func send(
        _ format: NotificationFormat, _ body: String, headers: NotificationHeaders = [:], to audience: Audience = .all
    ) async throws -> DispatchSummary {
        try await dispatcher.dispatch(NotificationHub.Notification(format: format, body: body, headers: headers, audience: audience)) {
            checkpoint in
            try await self.store.apply(checkpoint.expiredChannels)
        }
    }

    /// Delivers one payload straight through an adapter.
    func deliver(
        _ body: String, headers: NotificationHeaders = [:], to handles: [String], with adapter: BaiduAdapter? = nil,
        logger: Logger? = nil
    ) async -> [DeliveryResult] {
        let deliveries = handles.map {
            Delivery(
                notificationID: "n", installationID: nil, platform: .baidu, pushChannel: .handle($0), format: .baidu,
                payload: ByteBuffer(string: body), headers: headers)
        }
        let context: DeliveryContext = logger.map { .standalone(logger: $0) } ?? .standalone()
        return await (adapter ?? self.adapter).deliver(deliveries, context: context)
    }
}
