import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import ServiceLifecycle
import WebPush

/// The real Web Push adapter against the real emulator (TLS, port 0, endpoints on `localhost`), through a real
/// Dispatcher over an in-memory SQLite store.
struct WebPushHarness: Sendable {
    let emulator: WebPushEmulator
    let adapter: WebPushAdapter
    let store: SQLInstallationStore
    let dispatcher: Dispatcher
    let ports: WebPushEmulator.Ports

    static let tls = try! EmulatorTLS.generate()
    static let keys = VAPIDKeys.generate()
    static let subject = "mailto:ops@example.com"

    static let fast = DeliveryConfiguration(
        pageSize: 50, batchSize: 20, concurrency: 4, abandonAfterSeconds: 30, maximumAttempts: 3,
        initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.05)

    static var logger: Logger {
        var logger = Logger.forTest("webpush-test")
        logger.logLevel = .warning
        return logger
    }

    /// Settings for an adapter against the emulator on `port`.
    static func configuration(port: Int, keys: VAPIDKeys = keys) throws -> WebPushSettings {
        WebPushSettings(
            subject: subject, vapidKeys: keys,
            endpointPolicy: try WebPushEndpointPolicy(allowedHosts: ["localhost:\(port)"]),
            caCertificatePEM: tls.caCertificatePEM, maximumConcurrentRequests: 32, maximumConnectionsPerHost: 4,
            requestTimeout: .seconds(30), connectTimeout: .seconds(30))
    }

    /// Makes another adapter against the same emulator (the caller shuts it down).
    func makeAdapter(
        clock: any WallClock = SystemWallClock(), logger: Logger = WebPushHarness.logger,
        _ change: (inout WebPushSettings) -> Void = { _ in }
    ) throws -> WebPushAdapter {
        var configuration = try Self.configuration(port: ports.service)
        change(&configuration)
        return try WebPushAdapter(configuration: configuration, clock: clock, logger: logger)
    }

    static func with<T: Sendable>(
        delivery: DeliveryConfiguration = fast, emulator settings: WebPushEmulator.Configuration = .init(),
        _ body: @Sendable (WebPushHarness) async throws -> T
    ) async throws -> T {
        let emulator = WebPushEmulator(configuration: settings, tls: tls, logger: logger)
        let services = ServiceGroup(services: [emulator], logger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await services.run()
                return nil
            }
            let ports = await emulator.ports()
            let store = try await SQLInstallationStore.open(storage: .memory, logger: logger)
            let adapter = try WebPushAdapter(configuration: configuration(port: ports.service), logger: logger)
            let dispatcher = Dispatcher(
                store: store, adapters: try AdapterSet([adapter]), configuration: delivery, logger: logger)
            let harness = WebPushHarness(
                emulator: emulator, adapter: adapter, store: store, dispatcher: dispatcher, ports: ports)
            let result: Result<T, any Error>
            do {
                result = .success(try await body(harness))
            } catch {
                result = .failure(error)
            }
            try? await adapter.shutdown()
            try? await store.database.close()
            await services.triggerGracefulShutdown()
            while let _ = try? await group.next() {}
            return try result.get()
        }
    }

    /// Makes a subscription (restricted to the harness's VAPID key) and registers it as an installation.
    @discardableResult
    func register(
        _ id: String, tags: [String] = [], templates: [String: InstallationTemplate] = [:]
    ) async throws -> WebPushEmulatorSubscription {
        let subscription = emulator.createSubscription(applicationServerKey: Self.keys.publicKey)
        _ = try await store.upsert(
            Installation(installationID: id, platform: .browser, pushChannel: subscription.pushChannel, tags: tags, templates: templates))
        return subscription
    }

    /// Sends one notification through the dispatcher.
    func send(
        _ body: String, format: NotificationFormat = .browser, headers: NotificationHeaders = [:], to audience: Audience = .all
    ) async throws -> DispatchSummary {
        // Expired channels are applied as the delivery worker would.
        try await dispatcher.dispatch(NotificationHub.Notification(format: format, body: body, headers: headers, audience: audience)) {
            try await self.store.apply($0.expiredChannels)
        }
    }

    /// Delivers one payload straight through an adapter, to read a single result.
    func deliver(
        _ body: String, to channel: PushChannel, headers: NotificationHeaders = [:], with adapter: WebPushAdapter? = nil,
        logger: Logger = WebPushHarness.logger
    ) async -> DeliveryResult {
        let delivery = Delivery(
            notificationID: "n", installationID: nil, platform: .browser, pushChannel: channel, format: .browser,
            payload: ByteBuffer(string: body), headers: headers)
        return await (adapter ?? self.adapter).deliver([delivery], context: .standalone(logger: logger))[0]
    }
}
