import Crypto
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NIOHPACK
import NotificationHub
import Testing

@testable import APNs
@testable import PushEmulator

/// `hub.yaml` settings of an adapter serving both environments, and the emulator's settings and admin API for them.
@Suite struct APNsEnvironmentSettingsTests {
    static let production = P256.Signing.PrivateKey()
    static let sandbox = P256.Signing.PrivateKey()
    static let environment = [
        "PRODUCTION_KEY": production.pemRepresentation, "SANDBOX_KEY": sandbox.pemRepresentation,
        "SHARED_KEY": APNsHarness.signingKey.pemRepresentation,
    ]

    /// Reads an adapter entry; returns the settings and the problems as `keyPath: message` lines.
    static func read(_ yaml: String) -> (settings: APNsSettings?, problems: [String]) {
        let root = ConfigurationNode.parse(yaml: "type: apns\nteamId: TEAM123456\ntopic: com.example.app\n" + yaml, file: "hub.yaml", environment: environment)
        _ = root.string("type")
        let settings = APNsAdapterFactory.settings(from: root)
        root.rejectUnknownKeys()
        return (settings, root.problems.map { "\($0.keyPath): \($0.message)" })
    }

    @Test func aKeyPerEnvironment() throws {
        let (settings, problems) = Self.read(
            """
            endpoints:
              production: production
              sandbox: https://127.0.0.1:4447
            keys:
              production: {keyId: PRODKEY123, privateKey: "${PRODUCTION_KEY}"}
              sandbox: {keyId: SANDKEY123, privateKey: "${SANDBOX_KEY}"}
            rememberedDevices: 5000
            """)
        #expect(problems.isEmpty, "\(problems)")
        let read = try #require(settings)
        #expect(read.environment == .production && read.host == "api.push.apple.com" && read.port == 443)
        #expect(read.keyID == "PRODKEY123" && read.privateKeyPEM == Self.production.pemRepresentation)
        #expect(
            read.otherEnvironment
                == APNsEnvironmentSettings(
                    environment: .sandbox, host: "127.0.0.1", port: 4447, keyID: "SANDKEY123", privateKeyPEM: Self.sandbox.pemRepresentation))
        #expect(read.rememberedDevices == 5000)
        #expect(read.otherEnvironment?.description.contains("PRIVATE") == false)
        let adapter = try APNsAdapter(configuration: read, logger: Logger.forTest("t"))
        #expect(adapter.environments == [.production, .sandbox])
        #expect(adapter.routes.map(\.authority) == ["api.push.apple.com", "127.0.0.1:4447"])
    }

    @Test func oneKeyForBothAndSandboxFirst() throws {
        let (settings, problems) = Self.read(
            """
            endpoints: {production: production, sandbox: sandbox}
            firstEnvironment: sandbox
            keyId: KEY1234567
            privateKey: "${SHARED_KEY}"
            """)
        #expect(problems.isEmpty, "\(problems)")
        let read = try #require(settings)
        #expect(read.environment == .sandbox && read.host == "api.sandbox.push.apple.com")
        #expect(read.otherEnvironment?.environment == .production && read.otherEnvironment?.host == "api.push.apple.com")
        #expect(read.otherEnvironment?.keyID == "KEY1234567" && read.keyID == "KEY1234567")
        #expect(read.rememberedDevices == 1_000_000)
    }

    @Test func theSingleEnvironmentConfigurationReadsAsBefore() throws {
        for (endpoint, environment, host) in [
            ("production", APNsEnvironment.production, "api.push.apple.com"), ("sandbox", .sandbox, "api.sandbox.push.apple.com"),
            ("development", .sandbox, "api.sandbox.push.apple.com"), ("https://127.0.0.1:4443", nil, "127.0.0.1"),
        ] {
            let (settings, problems) = Self.read("endpoint: \(endpoint)\nkeyId: KEY1234567\nprivateKey: \"${SHARED_KEY}\"\n")
            #expect(problems.isEmpty, "\(problems)")
            #expect(settings?.environment == environment && settings?.host == host && settings?.otherEnvironment == nil)
        }
        // A key per environment for the one environment served.
        let (settings, problems) = Self.read(
            "endpoint: sandbox\nkeys:\n  sandbox: {keyId: SANDKEY123, privateKey: \"${SANDBOX_KEY}\"}\n")
        #expect(problems.isEmpty, "\(problems)")
        #expect(settings?.keyID == "SANDKEY123" && settings?.environment == .sandbox && settings?.otherEnvironment == nil)
    }

    /// Every mistake is reported at its key with what to do, and never shows a key.
    @Test(arguments: [
        (
            "endpoint: production\nendpoints: {production: production, sandbox: sandbox}\nkeyId: K1\nprivateKey: \"${SHARED_KEY}\"",
            "endpoints: give endpoint (one environment) or endpoints (both environments), not both"
        ),
        (
            "endpoints: {production: production}\nkeyId: K1\nprivateKey: \"${SHARED_KEY}\"",
            "endpoints.sandbox: endpoints needs sandbox too"
        ),
        (
            "endpoints: {production: sandbox, sandbox: sandbox}\nkeyId: K1\nprivateKey: \"${SHARED_KEY}\"",
            "endpoints.production: endpoints.production names the sandbox environment"
        ),
        (
            "endpoints: {production: ftp://x, sandbox: sandbox}\nkeyId: K1\nprivateKey: \"${SHARED_KEY}\"",
            "endpoints.production: endpoints.production must be production or an https://host[:port] URL"
        ),
        (
            "endpoints: {production: \"https://127.0.0.1:4443\", sandbox: \"https://127.0.0.1:4443\"}\nkeyId: K1\nprivateKey: \"${SHARED_KEY}\"",
            "endpoints: endpoints.production and endpoints.sandbox are the same address (127.0.0.1:4443)"
        ),
        (
            "endpoints: {production: production, sandbox: sandbox, development: sandbox}\nkeyId: K1\nprivateKey: \"${SHARED_KEY}\"",
            "endpoints.development: unknown key 'development'"
        ),
        (
            "endpoints: sandbox\nkeyId: K1\nprivateKey: \"${SHARED_KEY}\"",
            "endpoints: endpoints maps each environment to its endpoint"
        ),
        (
            "endpoints: {production: production, sandbox: sandbox}\nfirstEnvironment: staging\nkeyId: K1\nprivateKey: \"${SHARED_KEY}\"",
            "firstEnvironment: 'staging' is not allowed; use one of: production, sandbox"
        ),
        (
            "endpoint: production\nfirstEnvironment: sandbox\nkeyId: K1\nprivateKey: \"${SHARED_KEY}\"",
            "firstEnvironment: firstEnvironment applies only to an adapter serving both environments"
        ),
        (
            "endpoints: {production: production, sandbox: sandbox}\nrememberedDevices: -1\nkeyId: K1\nprivateKey: \"${SHARED_KEY}\"",
            "rememberedDevices: expected an integer from 0 to 100000000, got '-1'"
        ),
        (
            "endpoints: {production: production, sandbox: sandbox}\nkeyId: K1\nprivateKey: \"${SHARED_KEY}\"\nkeys: {sandbox: {keyId: S1, privateKey: \"${SANDBOX_KEY}\"}}",
            "keys: give keyId and privateKey (one key for every environment) or keys (a key per environment), not both"
        ),
        (
            "endpoints: {production: production, sandbox: sandbox}\nkeys: {production: {keyId: P1, privateKey: \"${PRODUCTION_KEY}\"}}",
            "keys.sandbox: keys has no entry for sandbox; add keys.sandbox with keyId and privateKey"
        ),
        (
            "endpoint: production\nkeys: {production: {keyId: P1, privateKey: \"${PRODUCTION_KEY}\"}, sandbox: {keyId: S1, privateKey: \"${SANDBOX_KEY}\"}}",
            "keys.sandbox: this adapter does not serve sandbox"
        ),
        (
            "endpoint: \"https://127.0.0.1:4443\"\nkeys: {production: {keyId: P1, privateKey: \"${PRODUCTION_KEY}\"}}",
            "keys: keys gives a key per environment, but endpoint is a URL whose environment is unknown"
        ),
        (
            "endpoints: {production: production, sandbox: sandbox}\nkeys: {production: {keyId: P1, privateKey: \"${PRODUCTION_KEY}\"}, sandbox: {keyId: S1, privateKey: not-a-key}}",
            "keys.sandbox.privateKey: privateKey is not a PKCS#8 PEM P-256 key (an APNs .p8 file)"
        ),
        (
            "endpoints: {production: production, sandbox: sandbox}\nkeys: {production: {keyId: P1, privateKey: \"${PRODUCTION_KEY}\"}, sandbox: {keyId: \"S 1\", privateKey: \"${SANDBOX_KEY}\"}}",
            "keys.sandbox.keyId: keyId must be letters and digits"
        ),
        (
            "endpoints: {production: production, sandbox: sandbox}\nkeys: {production: {keyId: P1, privateKey: \"${PRODUCTION_KEY}\"}, sandbox: {keyID: S1, privateKey: \"${SANDBOX_KEY}\"}}",
            "keys.sandbox.keyID: unknown key 'keyID'; did you mean 'keyId'?"
        ),
        (
            "endpoints: {production: production, sandbox: sandbox}\nkeys: {production: {keyId: P1, privateKey: \"${PRODUCTION_KEY}\"}, sandbox: {keyId: P1, privateKey: \"${SANDBOX_KEY}\"}}",
            "keys: keys.production and keys.sandbox both name key P1 but hold different private keys"
        ),
        (
            "endpoints: {production: production, sandbox: sandbox}\nkeys: [P1, S1]",
            "keys: keys maps each environment to its key"
        ),
        (
            "endpoints: {production: production, sandbox: sandbox}",
            "keyId: missing required key 'keyId'"
        ),
    ])
    func problemsAreReportedWhereTheyAre(yaml: String, expected: String) {
        let (settings, problems) = Self.read(yaml)
        #expect(settings == nil)
        #expect(problems.contains { $0.hasPrefix(expected) }, "\(problems)")
        for problem in problems {
            #expect(!problem.contains("PRIVATE KEY") && !problem.contains("MIG") && !problem.contains("not-a-key"), "\(problem)")
        }
    }

    /// The whole path as an iOS developer configures it: `hub.yaml` with both endpoints and a key per environment,
    /// against the emulator's two listeners.
    @Test func aHubYamlEntryServingBothEnvironmentsDelivers() async throws {
        let directory = try APNsConfigurationTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(APNsHarness.tls.caCertificatePEM.utf8).write(to: URL(fileURLWithPath: directory + "/ca.pem"))
        try await APNsHarness.withBothEnvironments { (hub) async throws in
            let production = try #require(hub.emulator.port(of: .production))
            let sandbox = try #require(hub.emulator.port(of: .sandbox))
            let root = ConfigurationNode.parse(
                yaml: """
                    type: apns
                    endpoints:
                      production: https://127.0.0.1:\(production)
                      sandbox: https://127.0.0.1:\(sandbox)
                    firstEnvironment: sandbox
                    caCertificate: ca.pem
                    teamId: \(APNsHarness.teamID)
                    keys:
                      production: {keyId: \(APNsHarness.productionOnlyKey.keyID), privateKey: {env: PRODUCTION_ONLY}}
                      sandbox: {keyId: \(APNsHarness.sandboxOnlyKey.keyID), privateKey: {env: SANDBOX_ONLY}}
                    topic: \(APNsHarness.topic)
                    """, file: directory + "/hub.yaml",
                environment: [
                    "PRODUCTION_ONLY": APNsHarness.productionOnlyKey.key.pemRepresentation,
                    "SANDBOX_ONLY": APNsHarness.sandboxOnlyKey.key.pemRepresentation,
                ])
            _ = root.string("type")
            let adapter = try #require(
                APNsAdapterFactory.makeAdapter(configuration: root, context: AdapterContext(hubName: "demo", logger: Logger.forTest("t")))
                    as? APNsAdapter)
            root.rejectUnknownKeys()
            #expect(root.problems.isEmpty, "\(root.problems)")
            #expect(adapter.environments == [.sandbox, .production])
            let appStore = APNsHarness.deviceToken(50)
            let development = APNsHarness.deviceToken(51)
            hub.emulator.registerDevice(appStore, in: .production)
            hub.emulator.registerDevice(development, in: .sandbox)
            let deliveries = [appStore, development].map { token in
                Delivery(
                    notificationID: "n", installationID: nil, platform: .apns, pushChannel: .handle(token), format: .apple,
                    payload: ByteBuffer(string: #"{"aps":{"alert":"x"}}"#), headers: [:])
            }
            #expect(await adapter.deliver(deliveries, context: .standalone()) == [.success, .success])
            // Sandbox first: the App Store token was refused there once.
            #expect(hub.emulator.requestCount(in: .sandbox) == 2 && hub.emulator.requestCount(in: .production) == 1)
            #expect(await adapter.deliver(deliveries, context: .standalone()) == [.success, .success])
            #expect(hub.emulator.requestCount(in: .sandbox) == 3 && hub.emulator.requestCount(in: .production) == 2)
            #expect(hub.emulator.violations.isEmpty)
            await adapter.shutdown()
        }
    }

    // MARK: Emulator

    @Test func theEmulatorSectionServesBothEnvironmentsWithRestrictedKeys() async throws {
        let directory = try APNsConfigurationTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let yaml = """
            emulators:
              directory: \(directory)/.emulator
              apns:
                port: 0
                sandboxPort: 0
                unregisteredTokens: none
                keys:
                  - {keyId: SANDKEY123, environment: sandbox}
                  - {keyId: BOTHKEY123}
            """
        let root = ConfigurationNode.parse(yaml: yaml, file: directory + "/hub.yaml")
        let pending = EmulatorSection.pendingFiles(root.child("emulators"), factories: [APNsEmulatorFactory.self])
        #expect(pending.keys.contains(directory + "/.emulator/apns-auth-key-SANDKEY123.p8"))
        #expect(pending.keys.contains(directory + "/.emulator/apns-auth-key-BOTHKEY123.p8"))
        let loadRoot = ConfigurationNode.parse(yaml: yaml, file: directory + "/hub.yaml")
        let emulators = try EmulatorSection.load(loadRoot.child("emulators"), factories: [APNsEmulatorFactory.self], logger: Logger.forTest("t"))
        #expect(loadRoot.problems.isEmpty, "\(loadRoot.problems)")
        let emulator = try #require(emulators.first as? APNsEmulator)
        #expect(emulator.configuration.sandboxPort == 0 && emulator.configuration.unregisteredTokenEnvironment == nil)
        #expect(emulator.configuration.keys.map(\.keyID) == ["SANDKEY123", "BOTHKEY123"])
        #expect(emulator.configuration.keys.map(\.environments) == [[.sandbox], [.production, .sandbox]])
        let written = try #require(FileManager.default.contents(atPath: directory + "/.emulator/apns-auth-key-SANDKEY123.p8"))
        let key = try P256.Signing.PrivateKey(pemRepresentation: String(decoding: written, as: UTF8.self))
        #expect(key.publicKey.rawRepresentation == emulator.configuration.keys[0].publicKey.rawRepresentation)
        try await emulator.start()
        #expect(emulator.port(of: .production) != nil && emulator.port(of: .sandbox) != nil)
        #expect(emulator.port(of: .production) != emulator.port(of: .sandbox))
        await emulator.stop()
    }

    @Test(arguments: [
        ("port: 4443\nsandboxPort: 4443", "emulators.apns.sandboxPort: sandboxPort must differ from port"),
        ("keys: [{keyId: KEY1234567}]", "emulators.apns.keys[0].keyId: key KEY1234567 is listed twice (or is the main keyId)"),
        ("keys: [{keyId: \"../x\"}]", "emulators.apns.keys[0].keyId: keyId must be letters and digits"),
        ("keys: [{keyId: K2, environment: staging}]", "emulators.apns.keys[0].environment: 'staging' is not allowed"),
        ("unregisteredTokens: both", "emulators.apns.unregisteredTokens: 'both' is not allowed"),
    ])
    func emulatorSectionProblems(yaml: String, expected: String) throws {
        let directory = try APNsConfigurationTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let indented = yaml.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n")
        let root = ConfigurationNode.parse(
            yaml: "emulators:\n  directory: \(directory)\n  apns:\n\(indented)\n", file: directory + "/hub.yaml")
        let emulators = try EmulatorSection.load(root.child("emulators"), factories: [APNsEmulatorFactory.self], logger: Logger.forTest("t"))
        #expect(emulators.isEmpty)
        let problems = root.problems.map { "\($0.keyPath): \($0.message)" }
        #expect(problems.contains { $0.hasPrefix(expected) }, "\(problems)")
    }

    @Test func theAdminAPIRegistersTokensForAnEnvironment() async throws {
        try await APNsHarness.withBothEnvironments { (hub) async throws in
            let token = APNsHarness.deviceToken(40)
            func post(_ body: String) -> (Int, String) {
                let (status, answer) = hub.emulator.admin(method: "POST", path: "/_emulator/devices/\(token)", body: ByteBuffer(string: body))
                return (status, String(buffer: answer))
            }
            #expect(post(#"{"environment":"staging"}"#).0 == 400)
            #expect(post(#"{"environment":7}"#).0 == 400)
            #expect(post(#"{"environment":"sandbox"}"#).0 == 200)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            #expect(hub.emulator.received.last?.environment == .sandbox)
            // An environment and a state at once.
            #expect(post(#"{"environment":"production","state":"unregistered"}"#).0 == 200)
            #expect(try await hub.sendDirect(to: [token]).count(of: .expiredChannel) == 1)

            let (status, stats) = hub.emulator.admin(method: "GET", path: "/_emulator/stats", body: nil)
            #expect(status == 200)
            let requests = try JSONValue(parsing: stats.readableBytesView).objectValue?["requests"]?.objectValue
            #expect(requests?["production"] == .number(Double(hub.emulator.requestCount(in: .production))))
            #expect(requests?["sandbox"] == .number(Double(hub.emulator.requestCount(in: .sandbox))))
            let received = try JSONValue(
                parsing: hub.emulator.admin(method: "GET", path: "/_emulator/received", body: nil).1.readableBytesView)
            #expect(received.arrayValue?.first?.objectValue?["environment"] == .string("sandbox"))

            // Reset forgets registrations and counts: the token belongs to no environment again.
            #expect(hub.emulator.admin(method: "POST", path: "/_emulator/reset", body: nil).0 == 200)
            #expect(hub.emulator.requestCount(in: .production) == 0 && hub.emulator.requestCount(in: .sandbox) == 0)
            hub.adapter.memory.clear()
            #expect(try await hub.sendDirect(to: [token]).count(of: .badChannel) == 1)
        }
    }
}

/// The emulator's key and environment rules, request by request.
@Suite struct APNsEmulatorEnvironmentRulesTests {
    let clock = ManualWallClock()

    func rules(unregistered: APNsEmulatorEnvironment? = nil) -> APNsRequestRules {
        APNsRequestRules(
            configuration: APNsEmulatorConfiguration(
                teamID: APNsHarness.teamID, keyID: APNsHarness.keyID, publicKey: APNsHarness.signingKey.publicKey,
                topics: [APNsHarness.topic], unregisteredTokenEnvironment: unregistered,
                keys: [
                    APNsEmulatorKey(keyID: "SANDKEY123", publicKey: APNsHarness.sandboxOnlyKey.key.publicKey, environments: [.sandbox]),
                    APNsEmulatorKey(keyID: "PRODKEY123", publicKey: APNsHarness.productionOnlyKey.key.publicKey, environments: [.production]),
                ],
                clock: clock))
    }

    func jwt(_ key: (keyID: String, key: P256.Signing.PrivateKey)) throws -> String {
        try APNsProviderToken(privateKeyPEM: key.key.pemRepresentation, teamID: APNsHarness.teamID, keyID: key.keyID, clock: clock).token()
    }

    func answer(
        _ rules: APNsRequestRules, jwt: String, token: String = APNsHarness.deviceToken(1), environment: APNsEmulatorEnvironment,
        state: inout APNsConnectionTokenState
    ) -> (Int, String?) {
        var headers = HPACKHeaders()
        headers.add(name: "authorization", value: "bearer " + jwt)
        headers.add(name: "apns-topic", value: APNsHarness.topic)
        let answer = rules.answer(
            method: "POST", path: "/3/device/" + token, headers: headers, body: ByteBuffer(string: #"{"aps":{"alert":"x"}}"#),
            token: &state, environment: environment)
        return (answer.status, answer.reason)
    }

    @Test func tokensBelongToOneEnvironment() throws {
        let rules = rules()
        let main = try jwt((APNsHarness.keyID, APNsHarness.signingKey))
        let development = APNsHarness.deviceToken(1)
        rules.registerDevice(development.uppercased(), in: .sandbox)
        var state = APNsConnectionTokenState()
        #expect(answer(rules, jwt: main, token: development, environment: .production, state: &state) == (400, "BadDeviceToken"))
        var sandbox = APNsConnectionTokenState()
        #expect(answer(rules, jwt: main, token: development, environment: .sandbox, state: &sandbox) == (200, nil))
        // Unregistered tokens belong to no environment here, and to the configured one otherwise.
        #expect(answer(rules, jwt: main, token: APNsHarness.deviceToken(2), environment: .production, state: &state) == (400, "BadDeviceToken"))
        let lenient = self.rules(unregistered: .production)
        var fresh = APNsConnectionTokenState()
        #expect(answer(lenient, jwt: main, token: APNsHarness.deviceToken(2), environment: .production, state: &fresh) == (200, nil))
        // A token of the other environment is an answer, not a broken rule.
        #expect(rules.recorder.violations.isEmpty)
    }

    @Test func keysRestrictedToOneEnvironmentAndUnrelatedKeysOnOneConnection() throws {
        let rules = rules(unregistered: .production)
        var production = APNsConnectionTokenState()
        #expect(answer(rules, jwt: try jwt(APNsHarness.sandboxOnlyKey), environment: .production, state: &production) == (403, "BadEnvironmentKeyIdInToken"))
        #expect(rules.recorder.violations.last == "BadEnvironmentKeyIdInToken: key SANDKEY123 is restricted to sandbox, used for production")
        #expect(answer(rules, jwt: try jwt(APNsHarness.productionOnlyKey), environment: .production, state: &production) == (200, nil))
        // The connection is now tied to PRODKEY123: another key, even one valid here, is unrelated.
        #expect(
            answer(rules, jwt: try jwt((APNsHarness.keyID, APNsHarness.signingKey)), environment: .production, state: &production)
                == (403, "UnrelatedKeyIdInToken"))
        #expect(rules.recorder.violations.last == "UnrelatedKeyIdInToken: key KEY1234567 on a connection first used with key PRODKEY123")
        // A renewed token of the same key is fine.
        clock.advance(by: 1300)
        #expect(answer(rules, jwt: try jwt(APNsHarness.productionOnlyKey), environment: .production, state: &production) == (200, nil))
        var sandbox = APNsConnectionTokenState()
        #expect(answer(rules, jwt: try jwt(APNsHarness.productionOnlyKey), environment: .sandbox, state: &sandbox) == (403, "BadEnvironmentKeyIdInToken"))
    }
}

/// The bounded memory of each device's environment.
@Suite struct APNsEnvironmentMemoryTests {
    @Test func remembersForgetsAndStaysBounded() {
        let memory = APNsEnvironmentMemory(capacity: 4)
        let keys = (0..<6).map { APNsEnvironmentMemory.key(for: APNsHarness.deviceToken($0)) }
        #expect(APNsEnvironmentMemory.key(for: "ABCDEF") == APNsEnvironmentMemory.key(for: "abcdef"))
        memory.remember([(keys[0], .sandbox), (keys[1], .production)])
        #expect(memory.environments(for: [keys[0], keys[1], keys[2]]) == [.sandbox, .production, nil])
        memory.remember(keys[2...5].map { ($0, .sandbox) })
        #expect(memory.count <= 4)
        // The most recent ones stay.
        #expect(memory.environments(for: [keys[4], keys[5]]) == [.sandbox, .sandbox])
        memory.forget([keys[5]])
        #expect(memory.environments(for: [keys[5]]) == [nil])
        // A lookup keeps a device from the previous generation.
        memory.remember([(keys[0], .production)])
        #expect(memory.environments(for: [keys[0]]) == [.production])
        for index in 0..<100 { memory.remember([(APNsEnvironmentMemory.key(for: APNsHarness.deviceToken(100 + index)), .production)]) }
        #expect(memory.count <= 4)
        let none = APNsEnvironmentMemory(capacity: 0)
        none.remember([(keys[0], .sandbox)])
        #expect(none.environments(for: [keys[0]]) == [nil] && none.count == 0)
    }
}
