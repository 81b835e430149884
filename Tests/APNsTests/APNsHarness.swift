import Crypto
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@testable import APNs

typealias Notification = NotificationHub.Notification

/// A real APNs emulator on 127.0.0.1:0, a real adapter pointed at it over TLS, and a real Dispatcher over an
/// in-memory SQLite store.
struct APNsHarness {
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let topic = "com.example.app"
    static let tls = try! EmulatorTLS.generate()
    static let signingKey = P256.Signing.PrivateKey()

    static let fast = DeliveryConfiguration(
        pageSize: 100, batchSize: 50, concurrency: 4, abandonAfterSeconds: 30, maximumAttempts: 3,
        initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.05)

    let emulator: APNsEmulator
    let adapter: APNsAdapter
    let store: SQLInstallationStore
    let dispatcher: Dispatcher

    /// A device token: 32 bytes of hex, distinct per index.
    static func deviceToken(_ index: Int) -> String {
        String(format: "%08x", index) + String(repeating: "ab", count: 28)
    }

    static func with<T: Sendable>(
        delivery: DeliveryConfiguration = fast,
        emulatorTeamID: String = teamID,
        adapterTeamID: String = teamID,
        topics: [String] = [topic, "com.example.second"],
        additionalTopics: [String] = ["com.example.second"],
        initialStreams: Int = 1,
        maximumStreams: Int = 1000,
        tokenMaximumAge: TimeInterval = 3600,
        tokenMinimumRefresh: TimeInterval = 0,
        connections: Int = 2,
        pingInterval: Duration = .seconds(60),
        pingTimeout: Duration = .seconds(20),
        clock: ManualWallClock? = nil,
        _ body: (APNsHarness) async throws -> T
    ) async throws -> T {
        let logger = Logger.forTest("apns-test")
        let emulatorClock: any WallClock = clock ?? SystemWallClock()
        let emulator = APNsEmulator(
            configuration: APNsEmulatorConfiguration(
                port: 0, teamID: emulatorTeamID, keyID: keyID, publicKey: signingKey.publicKey, topics: topics,
                initialConcurrentStreams: initialStreams, maximumConcurrentStreams: maximumStreams,
                tokenMaximumAge: tokenMaximumAge, tokenMinimumRefreshInterval: tokenMinimumRefresh, clock: emulatorClock),
            tls: tls, logger: logger)
        let port = try await emulator.start()
        let adapter = try APNsAdapter(
            configuration: APNsSettings(
                host: "127.0.0.1", port: port, caCertificatePEM: tls.caCertificatePEM, teamID: adapterTeamID, keyID: keyID,
                privateKeyPEM: signingKey.pemRepresentation, topic: topic, additionalTopics: additionalTopics,
                connections: connections, requestTimeout: .seconds(20), pingInterval: pingInterval,
                pingTimeout: pingTimeout, clock: emulatorClock),
            logger: logger)
        return try await run(emulator: emulator, adapter: adapter, delivery: delivery, body)
    }

    /// A key restricted to the production environment (known to the emulators of ``withBothEnvironments``).
    static let productionOnlyKey = (keyID: "PRODKEY123", key: P256.Signing.PrivateKey())
    /// A key restricted to the sandbox environment (known to the emulators of ``withBothEnvironments``).
    static let sandboxOnlyKey = (keyID: "SANDKEY123", key: P256.Signing.PrivateKey())

    /// An emulator serving both environments (production and sandbox listeners; device tokens registered to neither
    /// belong to `unregisteredTokens`), and one adapter serving both, trying `first` first, signing for each
    /// environment with its key (by default the main key, valid in both).
    static func withBothEnvironments<T: Sendable>(
        first: APNsEnvironment = .production,
        productionKey: (keyID: String, key: P256.Signing.PrivateKey) = (keyID, signingKey),
        sandboxKey: (keyID: String, key: P256.Signing.PrivateKey) = (keyID, signingKey),
        unregisteredTokens: APNsEmulatorEnvironment? = nil,
        rememberedDevices: Int = 1000,
        delivery: DeliveryConfiguration = fast,
        logger: Logger = Logger.forTest("apns-test"),
        _ body: (APNsHarness) async throws -> T
    ) async throws -> T {
        let emulator = APNsEmulator(
            configuration: APNsEmulatorConfiguration(
                port: 0, teamID: teamID, keyID: keyID, publicKey: signingKey.publicKey, topics: [topic],
                tokenMinimumRefreshInterval: 0, sandboxPort: 0, unregisteredTokenEnvironment: unregisteredTokens,
                keys: [
                    APNsEmulatorKey(keyID: productionOnlyKey.keyID, publicKey: productionOnlyKey.key.publicKey, environments: [.production]),
                    APNsEmulatorKey(keyID: sandboxOnlyKey.keyID, publicKey: sandboxOnlyKey.key.publicKey, environments: [.sandbox]),
                ]),
            tls: tls, logger: logger)
        try await emulator.start()
        let adapter: APNsAdapter
        do {
            let endpoints: [APNsEnvironment: (port: Int, key: (keyID: String, key: P256.Signing.PrivateKey))] = [
                .production: (try #require(emulator.port(of: .production)), productionKey),
                .sandbox: (try #require(emulator.port(of: .sandbox)), sandboxKey),
            ]
            let primary = try #require(endpoints[first])
            let secondary = try #require(endpoints[first.other])
            adapter = try APNsAdapter(
                configuration: APNsSettings(
                    host: "127.0.0.1", port: primary.port, caCertificatePEM: tls.caCertificatePEM, teamID: teamID,
                    keyID: primary.key.keyID, privateKeyPEM: primary.key.key.pemRepresentation, topic: topic, connections: 1,
                    requestTimeout: .seconds(20), environment: first,
                    otherEnvironment: APNsEnvironmentSettings(
                        environment: first.other, host: "127.0.0.1", port: secondary.port, keyID: secondary.key.keyID,
                        privateKeyPEM: secondary.key.key.pemRepresentation),
                    rememberedDevices: rememberedDevices),
                logger: logger)
        } catch {
            await emulator.stop()
            throw error
        }
        return try await run(emulator: emulator, adapter: adapter, delivery: delivery, logger: logger, body)
    }

    private static func run<T: Sendable>(
        emulator: APNsEmulator, adapter: APNsAdapter, delivery: DeliveryConfiguration,
        logger: Logger = Logger.forTest("apns-test"), _ body: (APNsHarness) async throws -> T
    ) async throws -> T {
        let store = try await SQLInstallationStore.open(storage: .memory, logger: logger)
        let dispatcher = Dispatcher(store: store, adapters: try AdapterSet([adapter]), configuration: delivery, logger: logger)
        let harness = APNsHarness(emulator: emulator, adapter: adapter, store: store, dispatcher: dispatcher)
        do {
            let result = try await body(harness)
            await harness.close()
            return result
        } catch {
            await harness.close()
            throw error
        }
    }

    func close() async {
        await adapter.shutdown()
        await emulator.stop()
        try? await store.database.close()
    }

    /// Registers an installation with a device token and tags.
    @discardableResult
    func register(_ id: String, token: String, tags: [String] = []) async throws -> Installation {
        let installation = Installation(installationID: id, platform: .apns, pushChannel: .handle(token), tags: tags)
        try adapter.validate(pushChannel: installation.pushChannel, platform: .apns)
        return try await store.upsert(installation)
    }

    /// Sends a direct notification to handles.
    func sendDirect(
        _ body: String = #"{"aps":{"alert":"hi"}}"#, headers: NotificationHeaders = [:], to tokens: [String]
    ) async throws -> DispatchSummary {
        try await dispatcher.dispatch(
            Notification(format: .apple, body: body, headers: headers, audience: .handles(.apns, tokens.map { .handle($0) })))
    }

    /// Waits (bounded) until a condition holds; used for connection state changes, never for timing assertions.
    static func eventually(_ condition: () -> Bool) async throws {
        for _ in 0..<3000 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
    }

    /// Decodes a JWT's header and claims.
    static func decodeJWT(_ jwt: String) throws -> (header: [String: JSONValue], claims: [String: JSONValue], signature: Data, signed: Data) {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        func decode(_ text: String) throws -> Data {
            var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while base64.count % 4 != 0 { base64 += "=" }
            return try #require(Data(base64Encoded: base64))
        }
        let header = try #require(try JSONValue(parsing: decode(parts[0])).objectValue)
        let claims = try #require(try JSONValue(parsing: decode(parts[1])).objectValue)
        return (header, claims, try decode(parts[2]), Data((parts[0] + "." + parts[1]).utf8))
    }
}
