import AdapterKit
import Crypto
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import Testing

@testable import APNs
@testable import PushEmulator

/// Certificate-based authentication: the adapter presents a provider certificate (PEM or PKCS#12) in the TLS
/// handshake and sends no provider token; the emulator checks client certificates against its client authority.
@Suite struct APNsCertificateTests {
    static let topic = APNsHarness.topic
    /// The emulator's client authority, and the provider certificates it issued.
    static let authority = try! APNsEmulatorClientAuthority.generate()
    static let universal = try! authority.issue(bundleID: topic)
    static let development = try! authority.issue(bundleID: topic, environment: .sandbox)

    /// An emulator that asks for client certificates (`required`: environments that take no provider tokens),
    /// trusting ``authority`` and the PKCS#12 fixture's CA, and an adapter authenticating with `certificate` (or,
    /// `nil`, with the harness's provider token).
    static func with<T: Sendable>(
        certificate: APNsClientCertificate?, required: Set<APNsEmulatorEnvironment> = [.production],
        emulatorClock: any WallClock = SystemWallClock(), topic: String? = nil,
        _ body: (APNsHarness) async throws -> T
    ) async throws -> T {
        let logger = Logger.forTest("apns-certificate-test")
        let emulator = APNsEmulator(
            configuration: APNsEmulatorConfiguration(
                port: 0, teamID: APNsHarness.teamID, keyID: APNsHarness.keyID, publicKey: APNsHarness.signingKey.publicKey,
                topics: [Self.topic], tokenMinimumRefreshInterval: 0, clock: emulatorClock,
                clientCertificates: APNsEmulatorClientCertificates(
                    authorityPEMs: [authority.certificatePEM, APNsCertificateFixtures.authorityPEM], required: required)),
            tls: APNsHarness.tls, logger: logger)
        let port = try await emulator.start()
        let settings =
            if let certificate {
                APNsSettings(
                    host: "127.0.0.1", port: port, caCertificatePEM: APNsHarness.tls.caCertificatePEM, teamID: "", keyID: "",
                    privateKeyPEM: "", topic: topic ?? certificate.bundleID ?? Self.topic, connections: 1,
                    requestTimeout: .seconds(20), certificate: certificate)
            } else {
                APNsSettings(
                    host: "127.0.0.1", port: port, caCertificatePEM: APNsHarness.tls.caCertificatePEM, teamID: APNsHarness.teamID,
                    keyID: APNsHarness.keyID, privateKeyPEM: APNsHarness.signingKey.pemRepresentation, topic: Self.topic,
                    connections: 1, requestTimeout: .seconds(20))
            }
        let adapter: APNsAdapter
        do {
            adapter = try APNsAdapter(configuration: settings, logger: logger)
        } catch {
            await emulator.stop()
            throw error
        }
        let store = try await SQLInstallationStore.open(storage: .memory, logger: logger)
        let harness = APNsHarness(
            emulator: emulator, adapter: adapter, store: store,
            dispatcher: Dispatcher(store: store, adapters: try AdapterSet([adapter]), configuration: APNsHarness.fast, logger: logger))
        do {
            let result = try await body(harness)
            await harness.close()
            return result
        } catch {
            await harness.close()
            throw error
        }
    }

    static func delivery(_ token: String, body: String = #"{"aps":{"alert":"hi"}}"#, headers: NotificationHeaders = [:]) -> Delivery {
        Delivery(
            notificationID: "n", installationID: nil, platform: .apns, pushChannel: .handle(token), format: .apple,
            payload: ByteBuffer(string: body), headers: headers)
    }

    // MARK: Delivery

    @Test func aPEMCertificateDeliversWithoutAProviderToken() async throws {
        let certificate = try APNsClientCertificate(certificatePEM: Self.universal.certificatePEM, privateKeyPEM: Self.universal.privateKeyPEM)
        #expect(certificate.bundleID == Self.topic)
        try await Self.with(certificate: certificate) { hub in
            let tokens = [APNsHarness.deviceToken(1), APNsHarness.deviceToken(2)]
            let summary = try await hub.sendDirect(to: tokens)
            #expect(summary.counts == [.apns: [.success: 2]])
            let received = hub.emulator.received
            #expect(Set(received.map(\.deviceToken)) == Set(tokens))
            // No provider token and no authorization header: the connection's certificate authenticates.
            #expect(received.allSatisfy { $0.providerToken.isEmpty && $0.headers["authorization"] == nil })
            #expect(received.allSatisfy { $0.headers["apns-topic"] == Self.topic })
            #expect(hub.emulator.violations.isEmpty, "\(hub.emulator.violations)")
        }
    }

    @Test func aPKCS12CertificateFromHubYamlDelivers() async throws {
        let directory = try APNsConfigurationTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(APNsCertificateFixtures.pkcs12).write(to: URL(fileURLWithPath: directory + "/push.p12"))
        try Data(APNsHarness.tls.caCertificatePEM.utf8).write(to: URL(fileURLWithPath: directory + "/emulator-ca.pem"))
        // No topic: the certificate's bundle id (subject UID) is the default topic.
        let node = Self.adapterNode(
            """
            certificate: {file: push.p12, password: {env: APNS_P12_PASSWORD}}
            """, directory: directory, environment: ["APNS_P12_PASSWORD": APNsCertificateFixtures.password])
        let settings = try #require(APNsAdapterFactory.settings(from: node), "\(node.problems)")
        #expect(node.problems.isEmpty)
        let certificate = try #require(settings.certificate)
        #expect(certificate.bundleID == Self.topic && settings.topic == Self.topic)
        #expect(certificate.subject.contains("Apple Push Services: com.example.app"))
        #expect(settings.teamID.isEmpty && settings.privateKeyPEM.isEmpty)
        try await Self.with(certificate: certificate) { hub in
            let summary = try await hub.sendDirect(to: [APNsHarness.deviceToken(3)])
            #expect(summary.counts == [.apns: [.success: 1]])
            #expect(hub.emulator.received.map(\.providerToken) == [""])
        }
    }

    @Test func aCertificatePerEnvironmentIsReadForBothEnvironments() throws {
        let directory = try APNsConfigurationTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.write(Self.universal, to: directory, name: "production")
        try Self.write(Self.development, to: directory, name: "sandbox")
        let node = Self.adapterNode(
            """
            endpoints: {production: production, sandbox: sandbox}
            certificates:
              production: {certificateFile: production.pem, privateKeyFile: production-key.pem}
              sandbox: {certificateFile: sandbox.pem, privateKeyFile: sandbox-key.pem}
            """, directory: directory, endpoint: nil)
        let settings = try #require(APNsAdapterFactory.settings(from: node), "\(node.problems)")
        #expect(settings.certificate?.subject.contains(APNsEmulatorClientAuthority.universalPrefix) == true)
        #expect(settings.otherEnvironment?.certificate?.subject.contains(APNsEmulatorClientAuthority.developmentPrefix) == true)
        #expect(settings.topic == Self.topic)
        #expect(node.warnings.isEmpty, "\(node.warnings)")
        let adapter = try APNsAdapter(configuration: settings, logger: Logger.forTest("t"))
        #expect(adapter.usesCertificateAuthentication)
        #expect(adapter.routes.allSatisfy { $0.providerToken == nil && $0.certificate != nil })
    }

    /// The demo path: `emulators: apns: clientCertificates:` writes an authority and a provider certificate, and an
    /// adapter entry naming those files delivers; a token adapter is refused where certificates are required.
    @Test func theEmulatorSectionWritesACertificateAnAdapterEntryUses() async throws {
        let directory = try APNsConfigurationTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let emulatorYAML = """
            emulators:
              directory: \(directory)/.emulator
              apns:
                port: 0
                topics: [com.example.app]
                clientCertificates: {required: [production]}
            """
        let emulatorRoot = ConfigurationNode.parse(yaml: emulatorYAML, file: directory + "/hub.yaml", environment: [:])
        // Before the emulator starts, validation reads its files from memory.
        let pending = EmulatorSection.pendingFiles(emulatorRoot.child("emulators"), factories: [APNsEmulatorFactory.self])
        #expect(pending.keys.contains(directory + "/.emulator/apns-client.pem"))
        let emulators = try EmulatorSection.load(
            ConfigurationNode.parse(yaml: emulatorYAML, file: directory + "/hub.yaml", environment: [:]).child("emulators"),
            factories: [APNsEmulatorFactory.self], logger: Logger.forTest("t"))
        let emulator = try #require(emulators.first as? APNsEmulator)
        #expect(emulator.configuration.clientCertificates?.required == [.production])
        let port = try await emulator.start()
        do {
            try await Self.deliverWithTheWrittenFiles(emulator: emulator, port: port, directory: directory)
            await emulator.stop()
        } catch {
            await emulator.stop()
            throw error
        }
    }

    static func deliverWithTheWrittenFiles(emulator: APNsEmulator, port: Int, directory: String) async throws {
        let keyFile = try #require(FileManager.default.attributesOfItem(atPath: directory + "/.emulator/apns-client-key.pem")[.posixPermissions] as? Int)
        #expect(keyFile == 0o600)

        func adapter(_ credentials: String) throws -> APNsAdapter {
            let node = Self.adapterNode(
                "caCertificate: .emulator/emulator-ca.pem\n" + credentials, directory: directory, endpoint: "https://127.0.0.1:\(port)")
            let made = APNsAdapterFactory.makeAdapter(configuration: node, context: AdapterContext(hubName: "demo", logger: Logger.forTest("t")))
            #expect(node.problems.isEmpty, "\(node.problems)")
            return try #require(made as? APNsAdapter)
        }
        let certificateAdapter = try adapter(
            "certificate: {certificateFile: .emulator/apns-client.pem, privateKeyFile: .emulator/apns-client-key.pem}")
        #expect(certificateAdapter.configuration.topic == Self.topic)
        let delivered = await certificateAdapter.deliver([Self.delivery(APNsHarness.deviceToken(11))], context: .standalone())
        #expect(delivered == [.success])
        await certificateAdapter.shutdown()

        let tokenAdapter = try adapter(
            "teamId: TEAM123456\nkeyId: KEY1234567\nprivateKey: {file: .emulator/apns-auth-key.p8}\ntopic: com.example.app")
        let refused = await tokenAdapter.deliver([Self.delivery(APNsHarness.deviceToken(12))], context: .standalone())
        #expect(refused == [DeliveryResult(.invalidCredentials, reason: "MissingProviderToken")])
        await tokenAdapter.shutdown()
        #expect(emulator.received.map(\.deviceToken) == [APNsHarness.deviceToken(11)])
    }

    // MARK: Refused connections

    @Test func aConnectionWithoutACertificateIsRefusedWhereOneIsRequired() async throws {
        // The token-authenticated adapter presents no certificate: this listener takes no provider tokens.
        try await Self.with(certificate: nil) { hub in
            let results = await hub.adapter.deliver([Self.delivery(APNsHarness.deviceToken(4))], context: .standalone())
            #expect(results == [DeliveryResult(.invalidCredentials, reason: "MissingProviderToken")])
            #expect(APNsReason(rawValue: results[0].reason ?? "") == .missingProviderToken)
            #expect(hub.emulator.received.isEmpty)
        }
        // Where certificates are optional, the provider token still authenticates.
        try await Self.with(certificate: nil, required: []) { hub in
            let results = await hub.adapter.deliver([Self.delivery(APNsHarness.deviceToken(4))], context: .standalone())
            #expect(results == [.success])
        }
    }

    @Test func aCertificateFromAnotherAuthorityIsABadCertificate() async throws {
        let stranger = try APNsEmulatorClientAuthority.generate(name: "Somebody else").issue(bundleID: Self.topic)
        let certificate = try APNsClientCertificate(certificatePEM: stranger.certificatePEM, privateKeyPEM: stranger.privateKeyPEM)
        try await Self.with(certificate: certificate, required: []) { hub in
            let results = await hub.adapter.deliver([Self.delivery(APNsHarness.deviceToken(5))], context: .standalone())
            #expect(results == [DeliveryResult(.invalidCredentials, reason: "BadCertificate")])
            #expect(APNsReason(rawValue: results[0].reason ?? "") == .badCertificate)
            #expect(hub.emulator.violations.contains { $0.hasPrefix("BadCertificate:") })
        }
    }

    @Test func aCertificateTheEmulatorSeesExpiredIsABadCertificate() async throws {
        let certificate = try APNsClientCertificate(certificatePEM: Self.universal.certificatePEM, privateKeyPEM: Self.universal.privateKeyPEM)
        let later = ManualWallClock(Date() + 2 * 365 * 86400)
        try await Self.with(certificate: certificate, emulatorClock: later) { hub in
            let results = await hub.adapter.deliver([Self.delivery(APNsHarness.deviceToken(6))], context: .standalone())
            #expect(results == [DeliveryResult(.invalidCredentials, reason: "BadCertificate")])
        }
    }

    @Test func aDevelopmentCertificateSentToProductionIsForTheWrongEnvironment() async throws {
        let certificate = try APNsClientCertificate(certificatePEM: Self.development.certificatePEM, privateKeyPEM: Self.development.privateKeyPEM)
        try await Self.with(certificate: certificate) { hub in
            let results = await hub.adapter.deliver([Self.delivery(APNsHarness.deviceToken(7))], context: .standalone())
            #expect(results == [DeliveryResult(.invalidCredentials, reason: "BadCertificateEnvironment")])
            #expect(APNsReason(rawValue: results[0].reason ?? "") == .badCertificateEnvironment)
        }
    }

    @Test func aCertificateAuthenticatedConnectionMaySendOnlyItsBundleID() async throws {
        let other = try Self.authority.issue(bundleID: "com.example.other")
        let certificate = try APNsClientCertificate(certificatePEM: other.certificatePEM, privateKeyPEM: other.privateKeyPEM)
        // The adapter is told the emulated app's topic, but the certificate is another app's.
        try await Self.with(certificate: certificate, topic: Self.topic) { hub in
            let results = await hub.adapter.deliver([Self.delivery(APNsHarness.deviceToken(8))], context: .standalone())
            #expect(results == [DeliveryResult(.invalidNotificationFormat, reason: "TopicDisallowed")])
        }
    }

    // MARK: MDM

    static let mdmBody = #"{"mdm":"1AA91790-BA78-4DBF-9102-FBA06E6110C4"}"#

    @Test func mdmIsRefusedWithTokenAuthentication() async throws {
        try await APNsHarness.with { hub in
            #expect(!hub.adapter.usesCertificateAuthentication)
            let error = #expect(throws: HubError.self) {
                try hub.adapter.validate(
                    notification: Notification(format: .apple, body: Self.mdmBody, headers: ["apns-push-type": "mdm"], audience: .all))
            }
            #expect(error?.code == .invalidNotification)
            #expect(error?.message.contains("mdm needs certificate authentication") == true)
            // A send that was accepted earlier is not delivered either.
            let results = await hub.adapter.deliver(
                [Self.delivery(APNsHarness.deviceToken(9), body: Self.mdmBody, headers: ["apns-push-type": "mdm"])], context: .standalone())
            #expect(results == [DeliveryResult(.invalidNotificationFormat, reason: "MDMNeedsCertificate")])
            #expect(hub.emulator.received.isEmpty)
        }
    }

    @Test func mdmIsDeliveredWithACertificateToItsTopicWithoutSuffix() async throws {
        let mdmTopic = "com.apple.mgmt.External.462ad9c3-7ca1-437b-8c6f-5575941a4ea7"
        let issued = try Self.authority.issue(bundleID: mdmTopic)
        let certificate = try APNsClientCertificate(certificatePEM: issued.certificatePEM, privateKeyPEM: issued.privateKeyPEM)
        try await Self.with(certificate: certificate) { hub in
            let headers: NotificationHeaders = ["apns-push-type": "mdm"]
            try hub.adapter.validate(notification: Notification(format: .apple, body: Self.mdmBody, headers: headers, audience: .all))
            // An MDM push carries the push magic only.
            #expect(throws: HubError.self) {
                try hub.adapter.validate(notification: Notification(format: .apple, body: #"{"aps":{"alert":"x"}}"#, headers: headers, audience: .all))
            }
            // An aps-less payload is not an alert.
            #expect(throws: HubError.self) {
                try hub.adapter.validate(notification: Notification(format: .apple, body: Self.mdmBody, audience: .all))
            }
            let summary = try await hub.sendDirect(Self.mdmBody, headers: headers, to: [APNsHarness.deviceToken(10)])
            #expect(summary.counts == [.apns: [.success: 1]])
            let received = try #require(hub.emulator.received.first)
            #expect(received.headers["apns-push-type"] == "mdm")
            #expect(received.headers["apns-topic"] == mdmTopic)
            #expect(received.payload == Self.mdmBody)
        }
    }

    // MARK: Configuration

    /// An adapter entry under `adapters:` in a `hub.yaml` in `directory`, with `lines` after `type` and `endpoint`.
    static func adapterNode(
        _ lines: String, directory: String, environment: [String: String] = [:], endpoint: String? = "production"
    ) -> ConfigurationNode {
        let indented = lines.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n")
        let yaml = "adapters:\n  - type: apns\n" + (endpoint.map { "    endpoint: \($0)\n" } ?? "") + indented + "\n"
        let root = ConfigurationNode.parse(yaml: yaml, file: directory + "/hub.yaml", environment: environment)
        let node = root.child("adapters").elements()[0]
        _ = node.string("type")
        return node
    }

    /// Writes `<name>.pem` and `<name>-key.pem`.
    static func write(_ issued: APNsEmulatorClientAuthority.Issued, to directory: String, name: String) throws {
        try Data(issued.certificatePEM.utf8).write(to: URL(fileURLWithPath: "\(directory)/\(name).pem"))
        try Data(issued.privateKeyPEM.utf8).write(to: URL(fileURLWithPath: "\(directory)/\(name)-key.pem"))
    }

    /// The problems of reading `lines`; none of them may hold the password or a private key.
    static func problems(_ lines: String, directory: String, environment: [String: String] = [:]) throws -> [ConfigurationProblem] {
        let node = adapterNode(lines, directory: directory, environment: environment)
        #expect(APNsAdapterFactory.settings(from: node) == nil)
        let problems = node.problems
        let secrets = [APNsCertificateFixtures.password, "PRIVATE KEY", universal.privateKeyPEM, APNsHarness.signingKey.pemRepresentation]
        for problem in problems {
            for secret in secrets { #expect(!problem.description.contains(secret), "\(problem)") }
        }
        return problems
    }

    @Test func configurationProblemsNameTheKeysAndHoldNoSecret() throws {
        let directory = try APNsConfigurationTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(APNsCertificateFixtures.pkcs12).write(to: URL(fileURLWithPath: directory + "/push.p12"))
        try Data(APNsCertificateFixtures.pkcs12WithoutKey).write(to: URL(fileURLWithPath: directory + "/nokey.p12"))
        try Data(APNsHarness.signingKey.pemRepresentation.utf8).write(to: URL(fileURLWithPath: directory + "/AuthKey.p8"))
        try Self.write(Self.universal, to: directory, name: "push")
        let expired = try Self.authority.issue(bundleID: Self.topic, validFrom: Date() - 2 * 86400, validUntil: Date() - 86400)
        try Self.write(expired, to: directory, name: "expired")
        try Data(Self.development.privateKeyPEM.utf8).write(to: URL(fileURLWithPath: directory + "/other-key.pem"))

        func messages(_ lines: String, environment: [String: String] = [:]) throws -> [String] {
            try Self.problems(lines, directory: directory, environment: environment).map(\.message)
        }

        // Both ways at once.
        let both = try messages(
            """
            teamId: TEAM123456
            keyId: KEY1234567
            privateKey: {file: AuthKey.p8}
            certificate: {file: push.p12, password: \(APNsCertificateFixtures.password)}
            topic: com.example.app
            """)
        #expect(both == ["give teamId, keyId, privateKey (token-based authentication) or certificate (certificate-based authentication), not both"])
        let problem = try Self.problems("teamId: TEAM123456\ncertificate: {file: push.p12}", directory: directory)
        #expect(problem.first?.line == 5 && problem.first?.keyPath == "adapters[0].certificate")

        // Both forms of certificate.
        #expect(
            try messages("certificate: {file: push.p12, password: x}\ncertificates: {production: {file: push.p12, password: x}}")
                == ["give certificate (one certificate for every environment) or certificates (one per environment), not both"])

        // Neither.
        let neither = try messages("topic: com.example.app")
        #expect(neither.count == 1)
        #expect(neither.first?.contains("teamId, keyId and privateKey") == true && neither.first?.contains("certificate") == true)

        // A wrong password, and none.
        #expect(
            try messages("certificate: {file: push.p12, password: not-the-password}")
                == ["the PKCS#12 file cannot be decrypted with the given password (wrong password, or a damaged file)"])
        #expect(
            try messages("certificate: {file: push.p12}")
                == ["the PKCS#12 file cannot be decrypted without a password; give certificate.password"])

        // No private key: a bundle exported without it, a PEM certificate without privateKeyFile, a key of another
        // certificate.
        let noKey = try messages("certificate: {file: nokey.p12, password: {env: P}}", environment: ["P": APNsCertificateFixtures.password])
        #expect(noKey.count == 1 && noKey.first?.hasPrefix("the PKCS#12 file holds no private key") == true)
        try Data(APNsCertificateFixtures.pkcs12WithoutCertificate).write(to: URL(fileURLWithPath: directory + "/nocert.p12"))
        let noCertificate = try messages("certificate: {file: nocert.p12, password: \(APNsCertificateFixtures.password)}")
        #expect(noCertificate == ["the PKCS#12 file holds no certificate, only a private key; export the certificate together with its private key"])
        let noKeyFile = try messages("certificate: {certificateFile: push.pem}")
        #expect(noKeyFile.count == 1 && noKeyFile.first?.hasPrefix("the certificate has no private key") == true)
        let wrongKey = try messages("certificate: {certificateFile: push.pem, privateKeyFile: other-key.pem}")
        #expect(wrongKey.count == 1 && wrongKey.first?.hasPrefix("the private key does not belong to the certificate") == true)

        // Expired, unreadable, not PKCS#12.
        let expiredProblem = try messages("certificate: {certificateFile: expired.pem, privateKeyFile: expired-key.pem}")
        #expect(expiredProblem.count == 1 && expiredProblem.first?.contains("expired on") == true)
        let missing = try messages("certificate: {file: absent.p12, password: x}")
        #expect(missing == ["cannot read the PKCS#12 file '\(directory)/absent.p12'"])
        let notPKCS12 = try messages("certificate: {file: push.pem, password: x}")
        #expect(notPKCS12 == ["the certificate file is not a PKCS#12 (.p12) file"])

        // A certificate for an environment the adapter does not serve.
        let perEnvironmentWithURL = try messages(
            "certificates: {production: {file: push.p12, password: x}, sandbox: {file: push.p12, password: x}}")
        #expect(perEnvironmentWithURL.contains { $0.hasPrefix("this adapter does not serve sandbox") })
    }

    @Test func aCertificateExpiringWithinThirtyDaysIsReadWithAWarning() throws {
        let directory = try APNsConfigurationTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.write(try Self.authority.issue(bundleID: Self.topic, validUntil: Date() + 10 * 86400 + 3600), to: directory, name: "soon")
        try Self.write(Self.universal, to: directory, name: "later")
        let soon = Self.adapterNode("certificate: {certificateFile: soon.pem, privateKeyFile: soon-key.pem}", directory: directory)
        #expect(APNsAdapterFactory.settings(from: soon) != nil && soon.problems.isEmpty)
        #expect(soon.warnings.count == 1)
        #expect(soon.warnings.first?.message.contains("in 10 day(s)") == true)
        #expect(soon.warnings.first?.keyPath == "adapters[0].certificate")
        // A development certificate for production (the emulator's names follow Apple's).
        try Self.write(Self.development, to: directory, name: "development")
        let development = Self.adapterNode(
            "certificate: {certificateFile: development.pem, privateKeyFile: development-key.pem}", directory: directory)
        let settings = APNsAdapterFactory.settings(from: development)
        #expect(settings?.certificate?.environments == [.sandbox] && development.problems.isEmpty)
        #expect(development.warnings.map(\.message).contains { $0.contains("serves production: APNs answers 403 BadCertificateEnvironment") })
        let later = Self.adapterNode("certificate: {certificateFile: later.pem, privateKeyFile: later-key.pem}", directory: directory)
        #expect(APNsAdapterFactory.settings(from: later) != nil && later.warnings.isEmpty)
    }

    @Test func theCertificateNeverAppearsInFullInItsDescriptions() throws {
        let certificate = try APNsClientCertificate(certificatePEM: Self.universal.certificatePEM, privateKeyPEM: Self.universal.privateKeyPEM)
        let texts = [String(describing: certificate), String(reflecting: certificate)]
        for text in texts {
            #expect(!text.contains("PRIVATE KEY") && text.contains("Apple Push Services: com.example.app"))
        }
        // A new key for the same subject reads differently (configuration fingerprints tell a renewal).
        let renewed = try Self.authority.issue(bundleID: Self.topic)
        let other = try APNsClientCertificate(certificatePEM: renewed.certificatePEM, privateKeyPEM: renewed.privateKeyPEM)
        #expect(String(reflecting: other) != String(reflecting: certificate))
        #expect(other != certificate)
    }
}
