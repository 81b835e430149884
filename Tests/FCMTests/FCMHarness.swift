import FCM
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import ServiceLifecycle
import _CryptoExtras

/// A real FCM emulator on 127.0.0.1 (port 0), a real FCM adapter pointed at it, a real SQLite store and a real
/// Dispatcher.
struct FCMHarness: Sendable {
    let emulator: FCMEmulator
    let adapter: FCMAdapter
    let store: SQLInstallationStore
    let dispatcher: Dispatcher
    let ports: FCMEmulator.Ports

    static let projectID = "test-project"
    static let clientEmail = "hub@test-project.iam.gserviceaccount.com"
    static let keyID = "test-key-1"
    /// One RSA key for the whole suite (generating one costs tens of milliseconds).
    static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let tls = try! EmulatorTLS.generate()

    static let fast = DeliveryConfiguration(
        pageSize: 50, batchSize: 25, concurrency: 4, abandonAfterSeconds: 30, maximumAttempts: 3,
        initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.05)

    static var logger: Logger {
        var logger = Logger.forTest("fcm-test")
        logger.logLevel = .warning
        return logger
    }

    /// A registration token the emulator considers well-formed.
    static func token(_ name: String) -> String { "fcm-token:\(name)-" + String(repeating: "x", count: 24) }

    /// A Firebase installation ID (22 URL-safe base64 characters, first character `c`–`f`) made from `name`.
    static func fid(_ name: String) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var hash: UInt64 = 14_695_981_039_346_656_037
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 1_099_511_628_211 }
        var text = "d"
        for _ in 0..<21 {
            text.append(alphabet[Int(hash % 64)])
            hash = hash / 64 &+ (hash &* 2_862_933_555_777_941_757)
        }
        return text
    }

    static func installation(
        _ id: String, platform: Platform = .fcmv1, tags: [String] = [], templates: [String: InstallationTemplate] = [:]
    ) -> Installation {
        Installation(
            installationID: id, platform: platform, pushChannel: .handle(token(id)), tags: tags, templates: templates)
    }

    /// A service-account JSON for the emulator's bound port, optionally with another project or key.
    static func serviceAccountJSON(
        port: Int, projectID: String = projectID, key: _RSA.Signing.PrivateKey = key, tokenURI: String? = nil
    ) -> String {
        FCMEmulatorFactory.serviceAccountJSON(
            projectID: projectID, privateKeyID: keyID, privateKey: key, clientEmail: clientEmail,
            tokenURI: tokenURI ?? "https://127.0.0.1:\(port)/token")
    }

    /// Makes another adapter against the same emulator (the caller shuts it down).
    func makeAdapter(
        serviceAccount: String? = nil, endpoint: String? = nil, renewalMargin: Duration = .seconds(300),
        connectTimeout: Duration = .seconds(10), target: FCMTarget = .automatic
    ) throws -> FCMAdapter {
        let account = try FCMServiceAccount(json: serviceAccount ?? Self.serviceAccountJSON(port: ports.service))
        return try FCMAdapter(
            serviceAccount: account,
            configuration: FCMAdapter.Configuration(
                endpoint: endpoint ?? "https://127.0.0.1:\(ports.service)", caCertificatePEM: Self.tls.caCertificatePEM,
                maximumConcurrentRequests: 16, requestTimeout: .seconds(10), tokenRenewalMargin: renewalMargin,
                connectTimeout: connectTimeout, target: target),
            logger: Self.logger)
    }

    static func with<T: Sendable>(
        accessTokenLifetime: Duration = .seconds(3600), renewalMargin: Duration = .seconds(300),
        delivery: DeliveryConfiguration = fast, _ body: @Sendable (FCMHarness) async throws -> T
    ) async throws -> T {
        let emulator = FCMEmulator(
            configuration: FCMEmulator.Configuration(
                projectID: projectID, clientEmail: clientEmail, privateKeyID: keyID, publicKey: key.publicKey,
                accessTokenLifetime: accessTokenLifetime),
            tls: tls, logger: logger)
        let services = ServiceGroup(services: [emulator], logger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await services.run()
                return nil
            }
            let ports = await emulator.ports()
            let store = try await SQLInstallationStore.open(storage: .memory, logger: logger)
            let account = try FCMServiceAccount(json: serviceAccountJSON(port: ports.service))
            let adapter = try FCMAdapter(
                serviceAccount: account,
                configuration: FCMAdapter.Configuration(
                    endpoint: "https://127.0.0.1:\(ports.service)", caCertificatePEM: tls.caCertificatePEM,
                    maximumConcurrentRequests: 16, requestTimeout: .seconds(10), tokenRenewalMargin: renewalMargin),
                logger: logger)
            let dispatcher = Dispatcher(
                store: store, adapters: try AdapterSet([adapter]), configuration: delivery, logger: logger)
            let harness = FCMHarness(emulator: emulator, adapter: adapter, store: store, dispatcher: dispatcher, ports: ports)
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

    /// Sends one notification through the dispatcher.
    func send(_ format: NotificationFormat, _ body: String, to audience: Audience = .all) async throws -> DispatchSummary {
        // Expired channels are applied as the delivery worker would.
        try await dispatcher.dispatch(NotificationHub.Notification(format: format, body: body, audience: audience)) {
            try await self.store.apply($0.expiredChannels)
        }
    }

    /// Delivers one payload straight through the adapter (to read a single result with its `retryAfter`).
    func deliver(
        _ format: NotificationFormat, _ body: String, to token: String, with adapter: FCMAdapter? = nil,
        logger: Logger = Logger.forTest("fcm-test")
    ) async -> DeliveryResult {
        let delivery = Delivery(
            notificationID: "n", installationID: nil, platform: format == .gcm ? .gcm : .fcmv1,
            pushChannel: .handle(token), format: format, payload: ByteBuffer(string: body), headers: [:])
        return await (adapter ?? self.adapter).deliver([delivery], context: .standalone(logger: logger))[0]
    }
}
