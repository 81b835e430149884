import Crypto
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@testable import APNs

/// One adapter serving both APNs environments, against an emulator serving both (a production and a sandbox
/// listener, device tokens registered to one environment each).
@Suite struct APNsEnvironmentTests {
    static let once = DeliveryConfiguration(
        pageSize: 100, batchSize: 50, concurrency: 2, abandonAfterSeconds: 30, maximumAttempts: 1,
        initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.02)

    /// Requests each listener answered so far.
    static func counts(_ hub: APNsHarness) -> (production: Int, sandbox: Int) {
        (hub.emulator.requestCount(in: .production), hub.emulator.requestCount(in: .sandbox))
    }

    @Test func sandboxAndProductionTokensInOneHubAreBothDelivered() async throws {
        try await APNsHarness.withBothEnvironments { (hub) async throws in
            let appStore = APNsHarness.deviceToken(1)
            let development = APNsHarness.deviceToken(2)
            hub.emulator.registerDevice(appStore, in: .production)
            hub.emulator.registerDevice(development, in: .sandbox)
            try await hub.register("app-store", token: appStore, tags: ["news"])
            try await hub.register("development", token: development, tags: ["news"])
            #expect(hub.adapter.environments == [.production, .sandbox])

            let summary = try await hub.dispatcher.dispatch(
                Notification(format: .apple, body: #"{"aps":{"alert":"hi"}}"#, audience: .tags(try TagExpression(parsing: "news"))))
            #expect(summary.counts == [.apns: [.success: 2]])
            let received = Dictionary(uniqueKeysWithValues: hub.emulator.received.map { ($0.deviceToken, $0.environment) })
            #expect(received == [appStore: .production, development: .sandbox])
            // Production first: the development token was refused there once, then taken by the sandbox.
            #expect(Self.counts(hub) == (2, 1))
            #expect(hub.adapter.rememberedEnvironment(of: appStore) == .production)
            #expect(hub.adapter.rememberedEnvironment(of: development.uppercased()) == .sandbox)
            #expect(hub.emulator.violations.isEmpty)
        }
    }

    @Test(arguments: [APNsEnvironment.production, .sandbox])
    func theLearnedEnvironmentIsReused(first: APNsEnvironment) async throws {
        try await APNsHarness.withBothEnvironments(first: first) { (hub) async throws in
            // A token of the environment tried second.
            let token = APNsHarness.deviceToken(3)
            let environment: APNsEmulatorEnvironment = first == .production ? .sandbox : .production
            hub.emulator.registerDevice(token, in: environment)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            #expect(hub.emulator.requestCount(in: environment) == 1)
            #expect(hub.emulator.requestCount(in: environment == .production ? .sandbox : .production) == 1)

            // The second send makes one request, straight to the environment that took the first.
            hub.emulator.reset()
            hub.emulator.registerDevice(token, in: environment)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            #expect(hub.emulator.requestCount(in: environment) == 1)
            #expect(hub.emulator.requestCount(in: environment == .production ? .sandbox : .production) == 0)
            #expect(hub.emulator.received.map(\.environment) == [environment])
        }
    }

    @Test func aTokenAcceptedByTheFirstEnvironmentIsNeverSentToTheOther() async throws {
        try await APNsHarness.withBothEnvironments(delivery: Self.once) { (hub) async throws in
            let accepted = APNsHarness.deviceToken(4)
            let unregistered = APNsHarness.deviceToken(5)
            let failing = APNsHarness.deviceToken(6)
            for token in [accepted, unregistered, failing] { hub.emulator.registerDevice(token, in: .production) }
            hub.emulator.setDevice(unregistered, .unregistered(Date()))
            hub.emulator.setDevice(failing, .reply(status: 500, reason: "InternalServerError"))
            let summary = try await hub.sendDirect(to: [accepted, unregistered, failing])
            #expect(summary.counts == [.apns: [.success: 1, .expiredChannel: 1, .pnsUnavailable: 1]])
            // Only BadDeviceToken and the wrong-environment key reasons send a device to the other environment.
            #expect(Self.counts(hub) == (3, 0))
        }
    }

    @Test func aTokenUnknownInBothEnvironmentsIsABadChannel() async throws {
        try await APNsHarness.withBothEnvironments(delivery: Self.once) { (hub) async throws in
            let unknown = APNsHarness.deviceToken(7)
            try await hub.register("stale", token: unknown, tags: ["t"])
            let summary = try await hub.dispatcher.dispatch(
                Notification(format: .apple, body: #"{"aps":{"alert":"hi"}}"#, audience: .tags(try TagExpression(parsing: "t"))))
            #expect(summary.counts == [.apns: [.badChannel: 1]])
            // Tried once in each environment, never more.
            #expect(Self.counts(hub) == (1, 1))
            #expect(hub.adapter.rememberedEnvironment(of: unknown) == nil)
            #expect(hub.emulator.received.isEmpty)

            let delivery = Delivery(
                notificationID: "n", installationID: nil, platform: .apns, pushChannel: .handle(unknown), format: .apple,
                payload: ByteBuffer(string: #"{"aps":{"alert":"x"}}"#), headers: [:])
            let results = await hub.adapter.deliver([delivery], context: .standalone())
            #expect(results == [DeliveryResult(.badChannel, reason: "BadDeviceToken")])
        }
    }

    @Test func aRememberedEnvironmentThatRefusesTheTokenIsCorrectedOnce() async throws {
        try await APNsHarness.withBothEnvironments { (hub) async throws in
            let token = APNsHarness.deviceToken(8)
            hub.emulator.registerDevice(token, in: .sandbox)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            #expect(hub.adapter.rememberedEnvironment(of: token) == .sandbox)

            // The same token now belongs to production (an emulator-only move): the remembered environment refuses
            // it, production takes it, and production is remembered.
            hub.emulator.reset()
            hub.emulator.registerDevice(token, in: .production)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            #expect(Self.counts(hub) == (1, 1))
            #expect(hub.adapter.rememberedEnvironment(of: token) == .production)
        }
    }

    @Test func withNothingRememberedEveryFirstSendStartsInTheFirstEnvironment() async throws {
        try await APNsHarness.withBothEnvironments(rememberedDevices: 0) { (hub) async throws in
            let token = APNsHarness.deviceToken(9)
            hub.emulator.registerDevice(token, in: .sandbox)
            for _ in 0..<2 { #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1) }
            #expect(Self.counts(hub) == (2, 2))
            #expect(hub.adapter.rememberedDevices == 0)
        }
    }

    @Test func eachEnvironmentSignsWithItsOwnKey() async throws {
        try await APNsHarness.withBothEnvironments(
            productionKey: APNsHarness.productionOnlyKey, sandboxKey: APNsHarness.sandboxOnlyKey
        ) { (hub) async throws in
            let appStore = APNsHarness.deviceToken(10)
            let development = APNsHarness.deviceToken(11)
            hub.emulator.registerDevice(appStore, in: .production)
            hub.emulator.registerDevice(development, in: .sandbox)
            #expect(try await hub.sendDirect(to: [appStore, development]).count(of: .success) == 2)
            for notification in hub.emulator.received {
                let kid = try APNsHarness.decodeJWT(notification.providerToken).header["kid"]
                let expected = notification.environment == .production ? APNsHarness.productionOnlyKey : APNsHarness.sandboxOnlyKey
                #expect(kid == .string(expected.keyID))
            }
            #expect(hub.emulator.violations.isEmpty)
        }
    }

    /// A key Apple restricted to sandbox, configured for production: production answers the wrong-environment
    /// reason. A development token still reaches the sandbox; an App Store token cannot be delivered, and its
    /// outcome names the key to fix.
    @Test func aKeyLimitedToSandboxUsedForProductionNamesTheKey() async throws {
        let logs = CapturedLogs()
        try await APNsHarness.withBothEnvironments(productionKey: APNsHarness.sandboxOnlyKey, delivery: Self.once) { (hub) async throws in
            let appStore = APNsHarness.deviceToken(12)
            let development = APNsHarness.deviceToken(13)
            hub.emulator.registerDevice(appStore, in: .production)
            hub.emulator.registerDevice(development, in: .sandbox)
            let deliveries = [appStore, development].map { token in
                Delivery(
                    notificationID: "n", installationID: nil, platform: .apns, pushChannel: .handle(token), format: .apple,
                    payload: ByteBuffer(string: #"{"aps":{"alert":"x"}}"#), headers: [:])
            }
            let results = await hub.adapter.deliver(deliveries, context: .standalone(logger: logs.logger()))
            #expect(results[1] == .success)
            #expect(results[0].outcome == .invalidCredentials)
            let reason = try #require(results[0].reason)
            #expect(reason.hasPrefix("BadEnvironmentKeyIdInToken: "))
            #expect(APNsReason(rawValue: String(reason.prefix { $0 != ":" })) == .badEnvironmentKeyIDInToken)
            #expect(reason.contains("the production key \(APNsHarness.sandboxOnlyKey.keyID)"))
            #expect(reason.contains("keys.production"))
            #expect(!reason.contains("PRIVATE KEY"))
            #expect(hub.emulator.violations.contains { $0.hasPrefix("BadEnvironmentKeyIdInToken: key SANDKEY123") })
            #expect(hub.adapter.rememberedEnvironment(of: development) == .sandbox)
            #expect(hub.adapter.rememberedEnvironment(of: appStore) == nil)
            // The operator is told once which key of which environment APNs refused, without any secret.
            let warnings = logs.entries.filter { $0.contains("APNs refused the key of an environment") }
            #expect(warnings.count == 1)
            #expect(warnings.first?.contains("SANDKEY123") == true && warnings.first?.contains("production") == true)
            let jwt = try APNsProviderToken(
                privateKeyPEM: APNsHarness.sandboxOnlyKey.key.pemRepresentation, teamID: APNsHarness.teamID,
                keyID: APNsHarness.sandboxOnlyKey.keyID
            ).token()
            for line in logs.entries {
                #expect(!line.contains("PRIVATE KEY") && !line.contains(jwt.prefix(20)) && !line.contains(appStore), "\(line)")
            }
        }
    }

    /// APNs has also been seen spelling the wrong-environment reason `BadEnvironmentKeyInToken`: it sends the device
    /// to the other environment the same way.
    @Test func theOtherSpellingOfTheWrongEnvironmentReasonIsFollowedToo() async throws {
        try await APNsHarness.withBothEnvironments(unregisteredTokens: .production, delivery: Self.once) { (hub) async throws in
            let token = APNsHarness.deviceToken(14)
            hub.emulator.registerDevice(token, in: .sandbox)
            let refused = APNsHarness.deviceToken(15)
            hub.emulator.setDevice(refused, .reply(status: 403, reason: "BadEnvironmentKeyInToken"))
            // The sandbox token is taken by the sandbox after production's BadDeviceToken; the other one is
            // production's, refused there with the key reason and by the sandbox as not its own.
            let summary = try await hub.sendDirect(to: [token, refused])
            #expect(summary.counts == [.apns: [.success: 1, .invalidCredentials: 1]])
            #expect(Self.counts(hub) == (2, 2))
            let results = await hub.adapter.deliver(
                [Delivery(
                    notificationID: "n2", installationID: nil, platform: .apns, pushChannel: .handle(refused), format: .apple,
                    payload: ByteBuffer(string: #"{"aps":{"alert":"x"}}"#), headers: [:])],
                context: .standalone())
            #expect(results[0].outcome == .invalidCredentials)
            #expect(results[0].reason?.hasPrefix("BadEnvironmentKeyInToken: APNs refused the production key \(APNsHarness.keyID)") == true)
        }
    }

    /// The configuration of one environment works as before, here against the production listener of an emulator
    /// serving both: a sandbox token is a bad channel after exactly one request.
    @Test func theSingleEnvironmentConfigurationStillWorks() async throws {
        let emulator = APNsEmulator(
            configuration: APNsEmulatorConfiguration(
                port: 0, teamID: APNsHarness.teamID, keyID: APNsHarness.keyID, publicKey: APNsHarness.signingKey.publicKey,
                topics: [APNsHarness.topic], sandboxPort: 0, unregisteredTokenEnvironment: nil,
                keys: [APNsEmulatorKey(keyID: APNsHarness.sandboxOnlyKey.keyID, publicKey: APNsHarness.sandboxOnlyKey.key.publicKey, environments: [.sandbox])]),
            tls: APNsHarness.tls, logger: Logger.forTest("apns-test"))
        let port = try await emulator.start()
        do {
            try await singleEnvironment(port: port, emulator: emulator)
        } catch {
            await emulator.stop()
            throw error
        }
        await emulator.stop()
    }

    func singleEnvironment(port: Int, emulator: APNsEmulator) async throws {
        let root = ConfigurationNode.parse(
            yaml: """
                type: apns
                endpoint: https://127.0.0.1:\(port)
                teamId: \(APNsHarness.teamID)
                keyId: \(APNsHarness.keyID)
                privateKey: ${KEY}
                topic: \(APNsHarness.topic)
                """, file: "hub.yaml", environment: ["KEY": APNsHarness.signingKey.pemRepresentation])
        _ = root.string("type")
        var settings = try #require(APNsAdapterFactory.settings(from: root), "\(root.problems)")
        root.rejectUnknownKeys()
        #expect(root.problems.isEmpty)
        #expect(settings.otherEnvironment == nil && settings.environment == nil)
        settings.caCertificatePEM = APNsHarness.tls.caCertificatePEM
        let adapter = try APNsAdapter(configuration: settings, logger: Logger.forTest("apns-test"))
        #expect(adapter.environments.isEmpty)
        let appStore = APNsHarness.deviceToken(16)
        let development = APNsHarness.deviceToken(17)
        emulator.registerDevice(appStore, in: .production)
        emulator.registerDevice(development, in: .sandbox)
        let results = await adapter.deliver(
            [appStore, development].map { token in
                Delivery(
                    notificationID: "n", installationID: nil, platform: .apns, pushChannel: .handle(token), format: .apple,
                    payload: ByteBuffer(string: #"{"aps":{"alert":"x"}}"#), headers: [:])
            },
            context: .standalone())
        #expect(results == [.success, DeliveryResult(.badChannel, reason: "BadDeviceToken")])
        #expect(emulator.requestCount(in: .production) == 2 && emulator.requestCount(in: .sandbox) == 0)
        #expect(adapter.rememberedEnvironment(of: appStore) == nil)

        // One environment named by word, signed with a key Apple restricted to sandbox: the typed reason, and the
        // message names the production key. (The emulator stands in for api.push.apple.com here.)
        var production = settings
        production.environment = .production
        production.keyID = APNsHarness.sandboxOnlyKey.keyID
        production.privateKeyPEM = APNsHarness.sandboxOnlyKey.key.pemRepresentation
        let misconfigured = try APNsAdapter(configuration: production, logger: Logger.forTest("apns-test"))
        let refused = await misconfigured.deliver(
            [Delivery(
                notificationID: "n", installationID: nil, platform: .apns, pushChannel: .handle(appStore), format: .apple,
                payload: ByteBuffer(string: #"{"aps":{"alert":"x"}}"#), headers: [:])],
            context: .standalone())
        #expect(refused[0].outcome == .invalidCredentials)
        #expect(refused[0].reason?.hasPrefix("BadEnvironmentKeyIdInToken: APNs refused the production key SANDKEY123") == true)
        await adapter.shutdown()
        await misconfigured.shutdown()
    }

    @Test func adaptersServingBothNameTwoDifferentEnvironments() throws {
        let pem = APNsHarness.signingKey.pemRepresentation
        let other = APNsEnvironmentSettings(environment: .sandbox, host: "127.0.0.1", port: 2, keyID: "K", privateKeyPEM: pem)
        for environment in [nil, APNsEnvironment.sandbox] {
            let settings = APNsSettings(
                host: "127.0.0.1", port: 1, teamID: "T", keyID: "K", privateKeyPEM: pem, topic: "app", environment: environment,
                otherEnvironment: other)
            let error = #expect(throws: APNsError.self) { _ = try APNsAdapter(configuration: settings, logger: Logger.forTest("t")) }
            #expect(error?.code == .invalidEnvironments)
        }
        var broken = other
        broken.privateKeyPEM = "not a key"
        let settings = APNsSettings(
            host: "127.0.0.1", port: 1, teamID: "T", keyID: "K", privateKeyPEM: pem, topic: "app", environment: .production,
            otherEnvironment: broken)
        let error = #expect(throws: APNsError.self) { _ = try APNsAdapter(configuration: settings, logger: Logger.forTest("t")) }
        #expect(error?.code == .invalidPrivateKey && error?.message.contains("sandbox") == true)
        #expect(error?.message.contains("not a key") == false)
        // One key for both environments mints one provider token for both.
        let shared = try APNsAdapter(
            configuration: APNsSettings(
                host: "127.0.0.1", port: 1, teamID: "T", keyID: "K", privateKeyPEM: pem, topic: "app", environment: .production,
                otherEnvironment: other),
            logger: Logger.forTest("t"))
        #expect(shared.routes.count == 2 && shared.routes[0].providerToken === shared.routes[1].providerToken)
    }
}
