import ADM
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Synchronization

/// A real ADM emulator on 127.0.0.1 (port 0), a real ADM adapter pointed at it, a real SQLite store and a real
/// Dispatcher.
struct ADMHarness: Sendable {
    let emulator: ADMEmulator
    let adapter: ADMAdapter
    let store: SQLInstallationStore
    let dispatcher: Dispatcher
    let ports: EmulatorPorts

    static let clientID = "amzn1.application-oa2-client.0123456789abcdef0123456789abcdef"
    static let secret = "test-client-secret-0123456789"
    static let tls = try! EmulatorTLS.generate()

    static let fast = DeliveryConfiguration(
        pageSize: 500, batchSize: 500, concurrency: 4, abandonAfterSeconds: 30, maximumAttempts: 3,
        initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.05)

    static var logger: Logger {
        var logger = Logger.forTest("adm-test")
        logger.logLevel = .warning
        return logger
    }

    /// A registration id of the shape ADM issues, with `/` and `+` in it (which travel percent-encoded).
    static func registrationID(_ name: String) -> String { "amzn1.adm-registration.v3.Y29t/bS5h+bWF6b24=" + name }

    static func installation(_ id: String, tags: [String] = [], templates: [String: InstallationTemplate] = [:]) -> Installation {
        Installation(installationID: id, platform: .adm, pushChannel: .handle(registrationID(id)), tags: tags, templates: templates)
    }

    func settings(secret: String = ADMHarness.secret, margin: Duration = .seconds(300)) -> ADMSettings {
        ADMSettings(
            clientID: Self.clientID, clientSecret: secret, tokenEndpoint: emulator.tokenEndpoint(port: ports.service),
            endpoint: emulator.endpoint(port: ports.service), caCertificatePEM: Self.tls.caCertificatePEM,
            maximumConcurrentRequests: 16, requestTimeout: .seconds(10), tokenRenewalMargin: margin)
    }

    static func with<T: Sendable>(
        accessTokenLifetime: Duration = .seconds(3600), acceptsUnknownRegistrations: Bool = true,
        logger: Logger = ADMHarness.logger, _ body: @Sendable (ADMHarness) async throws -> T
    ) async throws -> T {
        let emulator = ADMEmulator(
            configuration: ADMEmulator.Configuration(
                clientID: clientID, clientSecret: secret, accessTokenLifetime: accessTokenLifetime,
                acceptsUnknownRegistrations: acceptsUnknownRegistrations),
            tls: tls, logger: logger)
        return try await RunningServices.with([emulator], logger: logger) {
            let ports = await emulator.ports()
            let store = try await SQLInstallationStore.open(storage: .memory, logger: logger)
            let settings = ADMSettings(
                clientID: clientID, clientSecret: secret, tokenEndpoint: emulator.tokenEndpoint(port: ports.service),
                endpoint: emulator.endpoint(port: ports.service), caCertificatePEM: tls.caCertificatePEM,
                maximumConcurrentRequests: 16, requestTimeout: .seconds(10))
            let adapter = try ADMAdapter(settings: settings, logger: logger)
            let dispatcher = Dispatcher(store: store, adapters: try AdapterSet([adapter]), configuration: fast, logger: logger)
            let harness = ADMHarness(emulator: emulator, adapter: adapter, store: store, dispatcher: dispatcher, ports: ports)
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

    /// Sends one notification through the dispatcher, applying expired channels as the worker would; returns the
    /// summary and the channel replacements the dispatcher reported.
    func send(
        _ format: NotificationFormat, _ body: String, to audience: Audience = .all
    ) async throws -> (summary: DispatchSummary, replaced: [ChannelReplacement]) {
        let replaced = Replacements()
        let summary = try await dispatcher.dispatch(NotificationHub.Notification(format: format, body: body, audience: audience)) {
            checkpoint in
            replaced.list.withLock { $0 += checkpoint.replacedChannels }
            try await self.store.apply(checkpoint.expiredChannels)
        }
        return (summary, replaced.list.withLock { $0 })
    }

    /// The channel replacements of one dispatch's checkpoints.
    final class Replacements: Sendable {
        let list = Mutex<[ChannelReplacement]>([])
    }

    /// Delivers one payload straight through an adapter.
    func deliver(_ body: String, to registrationIDs: [String], with adapter: ADMAdapter? = nil) async -> [DeliveryResult] {
        let deliveries = registrationIDs.map {
            Delivery(
                notificationID: "n", installationID: nil, platform: .adm, pushChannel: .handle($0), format: .adm,
                payload: ByteBuffer(string: body), headers: [:])
        }
        return await (adapter ?? self.adapter).deliver(deliveries, context: .standalone())
    }
}
