import Foundation
import HubTestSupport
import NotificationHub
import Testing

@Suite struct ConfigurationTests {
    static let registry = AdapterRegistry([RecordingAdapterFactory.self])

    static let valid = """
        server:
          host: 0.0.0.0
          port: 9090
        hubs:
          demo:
            keys:
              - name: DefaultFullSharedAccessSignature
                rights: [Listen, Send, Manage]
                primaryKey: ${PRIMARY_KEY}
                secondaryKey: ${MISSING_KEY:-fallback-secondary-key}
            storage:
              sqlite: {path: data/demo.sqlite}
            limits:
              tagsPerInstallation: 10
              tagExpression: {maximumTags: 8}
            delivery: {pageSize: 200, expiredChannelPolicy: delete}
            adapters:
              - type: recording
                platform: test
                apiKey: {env: API_KEY}
        """

    static let environment = ["PRIMARY_KEY": "0123456789abcdef0123", "API_KEY": "secret-value"]

    func load(_ yaml: String, environment: [String: String] = environment) throws(ConfigurationError) -> HubsConfiguration {
        let root = ConfigurationNode.parse(yaml: yaml, file: "/etc/hub/hub.yaml", environment: environment)
        try root.throwIfProblems()
        return try HubsConfiguration(root: root, registry: Self.registry)
    }

    func problems(_ yaml: String, environment: [String: String] = environment) -> [ConfigurationProblem] {
        do {
            _ = try load(yaml, environment: environment)
            return []
        } catch {
            return error.problems
        }
    }

    @Test func decodesEveryKey() throws {
        let configuration = try load(Self.valid)
        #expect(configuration.server.host == "0.0.0.0")
        #expect(configuration.server.port == 9090)
        let hub = try #require(configuration.hub(named: "demo"))
        #expect(hub.keys.first?.rights == [.listen, .send, .manage])
        #expect(hub.keys.first?.primaryKey == "0123456789abcdef0123")
        #expect(hub.keys.first?.secondaryKey == "fallback-secondary-key")
        #expect(hub.storage == .sqlite(path: "/etc/hub/data/demo.sqlite"))
        #expect(hub.limits.tagsPerInstallation == 10)
        #expect(hub.limits.tagExpression.maximumTags == 8)
        #expect(hub.delivery.pageSize == 200)
        #expect(hub.delivery.expiredChannelPolicy == .delete)
        #expect(hub.adapters.map(\.type) == ["recording"])
    }

    @Test func theConsoleIsOffByDefaultAndItsPathIsNoHubName() throws {
        #expect(try load(Self.valid).server.console == false)
        let on = Self.valid.replacingOccurrences(of: "  port: 9090", with: "  port: 9090\n  console: true")
        #expect(try load(on).server.console == true)
        let clash = on.replacingOccurrences(of: "  demo:", with: "  console:")
        #expect(problems(clash).map(\.message).contains { $0.contains("the hub name 'console' is the admin console's path") })
        #expect(problems(Self.valid.replacingOccurrences(of: "  demo:", with: "  console:")).isEmpty)
    }

    /// `/blobs/…` holds the hubs' file containers (feedback, jobs), so no hub may be named so.
    @Test func blobsIsNoHubName() {
        for name in ["blobs", "Blobs"] {
            let clash = Self.valid.replacingOccurrences(of: "  demo:", with: "  \(name):")
            #expect(problems(clash).map(\.message).contains { $0.contains("the hub name 'blobs' is the path") })
        }
    }

    @Test func reportsEveryProblemWithPlaceAndKeyPath() {
        let yaml = """
            server:
              prot: 9090
              port: seventy
            hubs:
              demo:
                keys:
                  - name: k
                    rights: [Listen, Sned]
                    primaryKey: short
                adapters:
                  - type: carrier-pigeon
                  - type: recording
                    platfrom: test
            """
        let found = problems(yaml)
        let text = found.map(\.description)
        #expect(text.contains { $0.hasPrefix("/etc/hub/hub.yaml:2:3: server.prot: unknown key 'prot'; did you mean 'port'?") })
        #expect(text.contains { $0.hasPrefix("/etc/hub/hub.yaml:3:9: server.port: expected an integer from 0 to 65535") })
        #expect(text.contains { $0.contains("hubs.demo.keys[0].rights: unknown right 'Sned'") })
        #expect(text.contains { $0.contains("hubs.demo.keys[0].primaryKey: a key must be at least 16 characters") })
        #expect(text.contains { $0.contains("hubs.demo.adapters[0].type: unknown adapter type 'carrier-pigeon'; this hub knows: recording") })
        #expect(text.contains { $0.contains("hubs.demo.adapters[1].platfrom: unknown key 'platfrom'; did you mean 'platform'?") })
        #expect(text.contains { $0.contains("apiKey: missing required secret") })
        #expect(found.count >= 7)
        #expect(found.allSatisfy { $0.line > 0 })
    }

    @Test func missingEnvironmentVariablesAreNamedButSecretsNeverPrinted() {
        let found = problems(Self.valid, environment: ["API_KEY": "secret-value"])
        #expect(found.map(\.description).contains { $0.contains("environment variable PRIMARY_KEY is not set") })
        let leaked = problems(Self.valid.replacingOccurrences(of: "${PRIMARY_KEY}", with: "tiny-secret"))
        #expect(leaked.count == 1)
        #expect(!leaked.map(\.description).joined().contains("tiny-secret"))
    }

    @Test func malformedYAMLIsReportedWithPosition() {
        let found = problems("hubs:\n  demo: [unclosed\n")
        #expect(found.count == 1)
        #expect(found.first?.message.hasPrefix("invalid YAML") == true)
        #expect((found.first?.line ?? 0) >= 2)
    }

    @Test func wrongTypesAreReported() {
        let found = problems("hubs:\n  demo:\n    keys: nope\n    adapters: {type: recording}\n")
        let text = found.map(\.description)
        #expect(text.contains { $0.contains("hubs.demo.keys: expected a list") })
        #expect(text.contains { $0.contains("hubs.demo.adapters: expected a list") })
    }

    @Test func missingHubsAndUnreadableFiles() {
        #expect(problems("server: {port: 1}\n").contains { $0.message.contains("missing required key 'hubs'") })
        let root = ConfigurationNode.load(file: "/nonexistent/hub.yaml")
        #expect(root.problems.first?.message.contains("cannot read the configuration file") == true)
    }

    @Test func secretsFromFilesResolveRelativeToTheConfiguration() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("file-held-secret".utf8).write(to: directory.appendingPathComponent("key.txt"))
        let yaml = Self.valid.replacingOccurrences(of: "{env: API_KEY}", with: "{file: key.txt}")
        let root = ConfigurationNode.parse(
            yaml: yaml, file: directory.appendingPathComponent("hub.yaml").path, environment: Self.environment)
        _ = try HubsConfiguration(root: root, registry: Self.registry)
        let missing = ConfigurationNode.parse(
            yaml: yaml.replacingOccurrences(of: "key.txt", with: "absent.txt"),
            file: directory.appendingPathComponent("hub.yaml").path, environment: Self.environment)
        #expect(throws: ConfigurationError.self) { try HubsConfiguration(root: missing, registry: Self.registry) }
    }

    static func withSection(_ section: String) -> String {
        valid.replacingOccurrences(of: "    adapters:\n", with: section + "    adapters:\n")
    }

    @Test(arguments: [("announcementStyle: alert", true), ("apnsStyle: alert", true), ("announcementStyle: background", false)])
    func theAnnouncementStyleIsReadUnderItsNameOrItsFormerOne(line: String, alert: Bool) throws {
        let yaml = Self.withSection("""
                securePush:
                  encryptionKey: q83vEjRWeJDE4xKZ1bJd2Z7aX0c5vPzYl8bV1mQ+9wA=
                  \(line)
                deviceAuthentication:
                  issuer: https://id.example.com
                  hs256Secret: a-secret-that-is-32-bytes-long-or-more

            """)
        let hub = try #require(try load(yaml).hub(named: "demo"))
        #expect(try #require(hub.securePush).announcementStyle == (alert ? .alert : .background))
    }

    @Test func securePushAndDeliveryLimitsDecode() throws {
        let yaml = Self.withSection("""
                securePush:
                  encryptionKey: q83vEjRWeJDE4xKZ1bJd2Z7aX0c5vPzYl8bV1mQ+9wA=
                  apnsStyle: alert
                  alertText: Hi
                  authentication:
                    issuer: https://id.example.com
                    userClaim: uid
                    hs256Secret: a-secret-that-is-32-bytes-long-or-more
                    publicKeys:
                      - "-----BEGIN PUBLIC KEY-----\\nAAAA\\n-----END PUBLIC KEY-----"

            """).replacingOccurrences(
                of: "delivery: {pageSize: 200, expiredChannelPolicy: delete}",
                with: "delivery: {pageSize: 200, pagesInFlight: 2, rateLimitPerSecond: 5000, platformConcurrency: {apns: 4}}")
        let hub = try #require(try load(yaml).hub(named: "demo"))
        let secure = try #require(hub.securePush)
        #expect(secure.announcementStyle == .alert && secure.alertText == "Hi")
        let authentication = try #require(hub.deviceAuthentication)
        #expect(authentication.userClaim == "uid")
        #expect(authentication.issuer == "https://id.example.com")
        #expect(authentication.publicKeysPEM.count == 1)
        #expect(hub.delivery.pagesInFlight == 2)
        #expect(hub.delivery.rateLimitPerSecond == 5000)
        #expect(hub.delivery.platformConcurrency == ["apns": 4])
    }

    @Test func securePushProblemsNameTheKeyAndNeverTheSecret() {
        let found = problems(Self.withSection("""
                securePush:
                  encryptionKey: dG9vLXNob3J0LXNlY3JldA==
                  authentication:
                    hs256Secret: short-secret-value
                    issuer: x

            """))
        let text = found.map(\.description).joined(separator: "\n")
        #expect(found.contains { $0.keyPath == "hubs.demo.securePush.encryptionKey" && $0.message.contains("32 random bytes") })
        #expect(found.contains { $0.keyPath == "hubs.demo.securePush.authentication.hs256Secret" && $0.message.contains("at least 32 bytes") })
        #expect(!text.contains("dG9vLXNob3J0LXNlY3JldA==") && !text.contains("short-secret-value"))

        let missing = problems(Self.withSection("""
                securePush:
                  encryptionKey: q83vEjRWeJDE4xKZ1bJd2Z7aX0c5vPzYl8bV1mQ+9wA=
                  authentication: {issuer: x}

            """))
        #expect(missing.contains { $0.keyPath == "hubs.demo.securePush.authentication" && $0.message.contains("hs256Secret, publicKeys or jwks") })
    }
}

/// Device authentication, user-bound tags, the Listen key's policy and installation write limits in `hub.yaml`.
@Suite struct DeviceRegistrationConfigurationTests {
    static let secureKey = "q83vEjRWeJDE4xKZ1bJd2Z7aX0c5vPzYl8bV1mQ+9wA="
    static let deviceAuthentication = """
            deviceAuthentication:
              issuer: https://id.example.com
              audience: hub
              hs256Secret: a-secret-that-is-32-bytes-long-or-more

        """

    /// The valid configuration with `section` added to the hub and `limits` added to its `limits:` section.
    static func yaml(_ section: String, limits: String = "") -> String {
        ConfigurationTests.withSection(section).replacingOccurrences(
            of: "      tagExpression: {maximumTags: 8}\n", with: "      tagExpression: {maximumTags: 8}\n" + limits)
    }

    func hub(_ section: String, limits: String = "") throws -> (HubSettings, [ConfigurationProblem]) {
        let configuration = try ConfigurationTests().load(Self.yaml(section, limits: limits))
        return (try #require(configuration.hub(named: "demo")), configuration.warnings)
    }

    @Test func defaultsAreAzuresBehaviourWithLimits() throws {
        let (hub, warnings) = try hub("")
        #expect(hub.deviceAuthentication == nil)
        #expect(hub.listenKey.userBoundTags == .allow)
        #expect(hub.userBoundTags.prefixes == ["username:", "user:"])
        #expect(hub.limits.installationWrites.perUser == .init(perMinute: 30, burst: 20))
        #expect(hub.limits.installationWrites.perKey == .init(perMinute: 60_000, burst: 6_000))
        #expect(warnings.isEmpty)
    }

    @Test func everyKeyDecodes() throws {
        let (hub, warnings) = try hub(Self.deviceAuthentication + """
                userBoundTagPrefixes: ["member:", "account:"]
                listenKey: {userBoundTags: deny}
                securePush: {encryptionKey: \(Self.secureKey)}

            """, limits: "      installationWrites:\n        perUser: {perMinute: 10, burst: 5}\n        perKey: off\n")
        let authentication = try #require(hub.deviceAuthentication)
        #expect(authentication.issuer == "https://id.example.com" && authentication.audience == "hub")
        #expect(hub.userBoundTags.prefixes == ["member:", "account:"])
        #expect(hub.listenKey.userBoundTags == .deny)
        #expect(hub.securePush != nil)
        #expect(hub.limits.installationWrites.perUser == .init(perMinute: 10, burst: 5))
        #expect(hub.limits.installationWrites.perKey == nil)
        #expect(warnings.isEmpty, "deny with secure push is the recommended set-up: \(warnings)")
    }

    @Test func theOldKeyStillWorksWithADeprecationWarning() throws {
        let (hub, warnings) = try hub("""
                listenKey: {userBoundTags: deny}
                securePush:
                  encryptionKey: \(Self.secureKey)
                  authentication:
                    userClaim: uid
                    hs256Secret: a-secret-that-is-32-bytes-long-or-more

            """)
        #expect(hub.deviceAuthentication?.userClaim == "uid")
        #expect(warnings.count == 1)
        let warning = try #require(warnings.first)
        #expect(warning.keyPath == "hubs.demo.securePush.authentication")
        #expect(warning.message.contains("deprecated") && warning.message.contains("deviceAuthentication"))
        #expect(warning.line > 0)
    }

    @Test func securePushWithUserBoundTagsOverTheListenKeyIsWarnedAbout() throws {
        let (_, warnings) = try hub(Self.deviceAuthentication + "    securePush: {encryptionKey: \(Self.secureKey)}\n")
        let warning = try #require(warnings.first)
        #expect(warnings.count == 1)
        #expect(warning.keyPath == "hubs.demo.listenKey")
        #expect(warning.message.contains("listenKey.userBoundTags: deny"))
        #expect(warning.description.hasPrefix("/etc/hub/hub.yaml:"))
        // No user-bound namespaces: nothing to warn about.
        let (_, none) = try hub(
            Self.deviceAuthentication + "    userBoundTagPrefixes: []\n    securePush: {encryptionKey: \(Self.secureKey)}\n")
        #expect(none.isEmpty)
    }

    @Test func mistakesAreReportedAtTheirKey() {
        let cases: [(String, String, String)] = [
            (Self.deviceAuthentication + "    securePush:\n      encryptionKey: \(Self.secureKey)\n      authentication: {hs256Secret: a-secret-that-is-32-bytes-long-or-more}\n",
             "hubs.demo.securePush.authentication", "configured twice"),
            ("    securePush: {encryptionKey: \(Self.secureKey)}\n", "hubs.demo.securePush", "add a hub-level deviceAuthentication"),
            ("    deviceAuthentication: {issuer: x}\n", "hubs.demo.deviceAuthentication", "hs256Secret, publicKeys or jwks"),
            ("    deviceAuthentication: {hs256Secret: short}\n", "hubs.demo.deviceAuthentication.hs256Secret", "at least 32 bytes"),
            ("    listenKey: {userBoundTags: maybe}\n", "hubs.demo.listenKey.userBoundTags", "use one of: allow, deny"),
            ("    listenKey: {userBoundTag: deny}\n", "hubs.demo.listenKey.userBoundTag", "did you mean 'userBoundTags'"),
            ("    userBoundTagPrefixes: [\"user\", \"username:\"]\n", "hubs.demo.userBoundTagPrefixes", "is the start of 'username:'"),
            ("    userBoundTagPrefixes: [\"user name:\"]\n", "hubs.demo.userBoundTagPrefixes", "not a valid tag start"),
        ]
        let limits: [(String, String, String)] = [
            ("      installationWrites: {perUser: sometimes}\n", "hubs.demo.limits.installationWrites.perUser", "or off"),
            ("      installationWrites: {perKey: {perMinute: 0}}\n", "hubs.demo.limits.installationWrites.perKey.perMinute", "from 1 to"),
        ]
        let yamls = cases.map { (Self.yaml($0.0), $0.1, $0.2) } + limits.map { (Self.yaml("", limits: $0.0), $0.1, $0.2) }
        for (yaml, keyPath, message) in yamls {
            let found = ConfigurationTests().problems(yaml)
            #expect(
                found.contains { $0.keyPath == keyPath && $0.message.contains(message) },
                "\(keyPath): \(found.map(\.description))")
            #expect(!found.map(\.description).joined().contains("short"), "secrets never appear")
        }
    }
}
