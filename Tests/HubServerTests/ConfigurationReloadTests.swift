import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NotificationHub
import ServiceLifecycle
import Synchronization
import Testing

/// A real adapter for reload tests: it counts its deliveries, can hold them (to keep a delivery in flight across a
/// reload), and records when its `run()` returned (it was shut down). Its settings are `scope` (one per test) and
/// `version`: changing the version changes the settings.
final class GatedAdapter: PlatformAdapter, Sendable {
    struct State {
        var calls = 0
        var delivered = 0
        var stopped = false
    }

    /// Versions whose deliveries wait, by scope.
    static let held = Mutex<Set<String>>([])
    /// Every adapter made, by scope.
    static let made = Mutex<[String: [GatedAdapter]]>([:])

    let scope: String
    let version: Int
    let state = Mutex(State())
    let descriptor = PlatformDescriptor(
        platforms: [Platform("test")], formats: [NotificationFormat("testformat"): [Platform("test")]],
        templateFormats: [Platform("test"): NotificationFormat("testformat")], maximumPayloadBytes: 4096)

    init(scope: String, version: Int) {
        self.scope = scope
        self.version = version
        Self.made.withLock { $0[scope, default: []].append(self) }
    }

    static func hold(_ scope: String, version: Int) { _ = held.withLock { $0.insert("\(scope)#\(version)") } }
    static func release(_ scope: String, version: Int) { _ = held.withLock { $0.remove("\(scope)#\(version)") } }

    func validate(pushChannel: PushChannel, platform: Platform) throws(HubError) {
        guard pushChannel.handle?.hasPrefix("dev-") == true else { throw HubError(.invalidPushChannel, "dev-<n>") }
    }

    func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] { [] }

    func deliver(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
        state.withLock { $0.calls += 1 }
        while Self.held.withLock({ $0.contains("\(scope)#\(version)") }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        state.withLock { $0.delivered += deliveries.count }
        return deliveries.map { _ in .success }
    }

    func run() async throws {
        try? await gracefulShutdown()
        state.withLock { $0.stopped = true }
    }

    var delivered: Int { state.withLock { $0.delivered } }
    var calls: Int { state.withLock { $0.calls } }
    var stopped: Bool { state.withLock { $0.stopped } }
}

enum GatedAdapterFactory: PlatformAdapterFactory {
    static let type = "gated"

    struct Settings: Sendable, Equatable {
        var scope: String
        var version: Int
    }

    static func settings(from configuration: ConfigurationNode) -> Settings? {
        guard let scope = configuration.string("scope", required: true) else { return nil }
        return Settings(scope: scope, version: configuration.integer("version", default: 1, in: 1...1000))
    }

    static func makeAdapter(settings: Settings, context: AdapterContext) throws(HubError) -> any PlatformAdapter {
        GatedAdapter(scope: settings.scope, version: settings.version)
    }
}

@Suite(.timeLimit(.minutes(5))) struct ConfigurationReloadTests {
    static let registry = AdapterRegistry([GatedAdapterFactory.self, RecordingAdapterFactory.self])
    static let manageKey = "manage-key-0123456789"

    /// A configuration of hubs, each with a Manage key `manage` and a gated adapter.
    static func yaml(
        scope: String, version: Int = 1, hubs: [String] = ["demo"], key: String = manageKey, port: Int = 8080,
        extra: String = ""
    ) -> String {
        var text = "server: {host: 127.0.0.1, port: \(port)}\nhubs:\n"
        for hub in hubs {
            text += """
                  \(hub):
                    keys: [{name: manage, rights: [Manage], primaryKey: \(key)}]
                    storage: {sqlite: {path: ":memory:"}}
                    delivery: {initialBackoffSeconds: 0.01}
                    adapters: [{type: gated, scope: \(scope), version: \(version)}]
                \(extra)
                """
        }
        return text
    }

    static func configuration(_ yaml: String, file: String = "/tmp/hub.yaml") throws -> HubsConfiguration {
        let root = ConfigurationNode.parse(yaml: yaml, file: file, environment: [:])
        try root.throwIfProblems()
        var configuration = try HubsConfiguration(root: root, registry: registry)
        configuration.sha256 = String(yaml.hashValue, radix: 16)
        return configuration
    }

    /// Reads a file as `hub serve` does.
    static func read(_ file: String) -> Result<HubsConfiguration, ConfigurationError> {
        do {
            return .success(try HubsConfiguration.load(file: file, registry: registry, environment: [:]))
        } catch {
            return .failure(error)
        }
    }

    static func token(hub: String = "demo", key: String = manageKey) -> String {
        SharedAccessSignature.make(
            resource: "http://localhost/\(hub)", keyName: "manage", key: key, expiry: Date() + 3600)
    }

    static func send(_ api: APITestHarness, hub: String = "demo", key: String = manageKey) async throws -> TestResponse {
        try await api.client.execute(
            uri: "/\(hub)/messages", method: .post,
            headers: [
                .authorization: token(hub: hub, key: key), HTTPField.Name("ServiceBusNotification-Format")!: "testformat",
            ],
            body: ByteBuffer(string: #"{"n":1}"#))
    }

    static func register(_ api: APITestHarness, id: String, hub: String = "demo") async throws -> TestResponse {
        try await api.client.execute(
            uri: "/\(hub)/installations/\(id)", method: .put, headers: [.authorization: token(hub: hub)],
            body: ByteBuffer(string: APITestHarness.installationJSON(id)))
    }

    static func waitFor(_ condition: () async throws -> Bool) async throws -> Bool {
        for _ in 0..<1000 {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    @Test func equalSettingsKeepTheAdapterAndChangedOnesReplaceItAfterItsDeliveriesFinish() async throws {
        let scope = "reuse-\(UUID().uuidString.prefix(8))"
        try await APITestHarness.run(configuration: Self.configuration(Self.yaml(scope: scope))) { api in
            let first = try #require(api.hub.configuration.adapters.adapters.first as? GatedAdapter)
            // A change that leaves the adapter's settings alone keeps the adapter.
            let same = try Self.configuration(Self.yaml(scope: scope, extra: "    limits: {tagsPerInstallation: 30}"))
            let kept = await api.runtime.apply(same)
            #expect(kept.result == "applied")
            #expect(kept.changes.live == ["hubs.demo:limits"])
            #expect(api.hub.configuration.adapters.adapters.first as? GatedAdapter === first)
            #expect(api.hub.configuration.limits.tagsPerInstallation == 30)

            // A delivery in flight on version 1 while version 2 replaces it.
            #expect(try await Self.register(api, id: "i1").status == .ok)
            GatedAdapter.hold(scope, version: 1)
            #expect(try await Self.send(api).status == .created)
            #expect(try await Self.waitFor { first.calls > 0 })
            let replaced = await api.runtime.apply(try Self.configuration(Self.yaml(scope: scope, version: 2)))
            #expect(replaced.changes.live.contains("hubs.demo:adapters.gated"))
            let second = try #require(api.hub.configuration.adapters.adapters.first as? GatedAdapter)
            #expect(second !== first && second.version == 2)
            // New deliveries go to the new adapter while the old one still holds its delivery.
            #expect(try await Self.send(api).status == .created)
            #expect(try await Self.waitFor { second.delivered == 1 })
            try await Task.sleep(for: .milliseconds(200))
            #expect(!first.stopped, "the old adapter runs until its delivery finished")
            #expect(first.delivered == 0)
            GatedAdapter.release(scope, version: 1)
            #expect(try await Self.waitFor { first.stopped })
            #expect(first.delivered == 1, "the delivery in flight finished on the old adapter")
            #expect(!second.stopped)
        }
    }

    @Test func accessKeysAddedRotatedOrRemovedTakeEffectOnTheNextRequest() async throws {
        let scope = "keys-\(UUID().uuidString.prefix(8))"
        try await APITestHarness.run(configuration: Self.configuration(Self.yaml(scope: scope))) { api in
            #expect(try await Self.send(api).status == .created)
            let rotated = "rotated-manage-key-0123456789"
            await api.runtime.apply(try Self.configuration(Self.yaml(scope: scope, key: rotated)))
            #expect(try await Self.send(api).status == .unauthorized)
            #expect(try await Self.send(api, key: rotated).status == .created)
            // The adapter did not change: it is the same one.
            #expect(GatedAdapter.made.withLock { $0[scope]?.count } == 1)
        }
    }

    @Test func aHubAddedServesAndAHubRemovedAnswers404() async throws {
        let scope = "hubs-\(UUID().uuidString.prefix(8))"
        try await APITestHarness.run(configuration: Self.configuration(Self.yaml(scope: scope))) { api in
            #expect(try await Self.send(api, hub: "second").status == .unauthorized)
            let added = await api.runtime.apply(try Self.configuration(Self.yaml(scope: scope, hubs: ["demo", "second"])))
            #expect(added.changes.live == ["hubs.second (added)"])
            #expect(try await Self.register(api, id: "i1", hub: "second").status == .ok)
            #expect(try await Self.send(api, hub: "second").status == .created)

            let removed = await api.runtime.apply(try Self.configuration(Self.yaml(scope: scope, hubs: ["second"])))
            #expect(removed.changes.live == ["hubs.demo (removed)"])
            let gone = try await Self.send(api, hub: "demo")
            #expect(gone.status == .notFound)
            #expect(gone.errorCode == "HubNotFound")
            // A token for a name that never was a hub is answered as before: not a hint.
            #expect(try await Self.send(api, hub: "never").status == .unauthorized)
            #expect(try await Self.send(api, hub: "second").status == .created)
        }
    }

    @Test func theRunningConfigurationShowsAHubOnlyItsOwnAndTheServersDigests() async throws {
        let scope = "parts-\(UUID().uuidString.prefix(8))"
        let configuration = try Self.configuration(Self.yaml(scope: scope, hubs: ["demo", "second"]))
        try await APITestHarness.run(configuration: configuration) { api in
            _ = await api.runtime.apply(configuration)
            let answer = try await api.client.execute(
                uri: "/demo/configuration", method: .get, headers: [.authorization: Self.token(hub: "demo")])
            #expect(answer.status == .ok)
            let object = try JSONSerialization.jsonObject(with: Data(answer.text.utf8)) as? [String: Any]
            let parts = try #require(object?["parts"] as? [String: String])
            #expect(parts.keys.contains("hubs.demo:keys"))
            #expect(parts.keys.contains("server.address"))
            #expect(!parts.keys.contains { $0.hasPrefix("hubs.second") }, "\(parts.keys.sorted())")
            #expect(!answer.text.contains(Self.manageKey))
            // Listen or Send rights do not read it.
            let send = try await api.client.execute(uri: "/second/configuration", method: .get, headers: [:])
            #expect(send.status == .unauthorized)
        }
    }

    @Test func whatNeedsARestartIsReportedAndTheRestApplied() async throws {
        let scope = "restart-\(UUID().uuidString.prefix(8))"
        let directory = NSTemporaryDirectory() + "hub-restart-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await APITestHarness.run(configuration: Self.configuration(Self.yaml(scope: scope))) { api in
            let changed = Self.yaml(scope: scope, port: 9191)
                .replacingOccurrences(of: #"{sqlite: {path: ":memory:"}}"#, with: "{sqlite: {path: \(directory)/demo.sqlite}}")
                .replacingOccurrences(of: "initialBackoffSeconds: 0.01", with: "initialBackoffSeconds: 0.02")
            let report = await api.runtime.apply(try Self.configuration(changed))
            #expect(report.result == "applied")
            #expect(report.changes.restartRequired == ["hubs.demo:storage", "server.address"])
            #expect(report.changes.live == ["hubs.demo:delivery"])
            #expect(api.hub.configuration.delivery.initialBackoffSeconds == 0.02)
            #expect(api.hub.configuration.storage == .memory, "the running store stays")
            #expect(api.runtime.configuration.server.port == 8080)
            #expect(api.runtime.status.snapshot.restartRequired == ["hubs.demo:storage", "server.address"])
            #expect(!FileManager.default.fileExists(atPath: directory + "/demo.sqlite"))
            // The same file again: nothing more to apply, the restart still pending.
            #expect(await api.runtime.apply(try Self.configuration(changed)).changes.live.isEmpty)
        }
    }

    @Test func aFileWithAProblemIsRejectedWholeAndNoSecretIsLoggedOrShown() async throws {
        let scope = "reject-\(UUID().uuidString.prefix(8))"
        let directory = NSTemporaryDirectory() + "hub-reject-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/hub.yaml"
        try Self.yaml(scope: scope).write(toFile: file, atomically: true, encoding: .utf8)
        let load: ConfigurationReloader.Load = { Self.read(file) }
        let initial = try load().get()
        let logs = CapturedLogs()
        let logger = {
            var logger = logs.logger()
            logger.logLevel = .info
            return logger
        }()
        try await APITestHarness.run(configuration: initial, logger: logger) { api in
            let reloader = ConfigurationReloader(runtime: api.runtime, file: file, signals: false, logger: logger, load: load)
            // A new key (a secret) and a device-token secret too short: the file is refused whole.
            let rotated = "rotated-secret-key-0123456789"
            let shortSecret = "short-jwt-secret-abc"
            let bad = Self.yaml(
                scope: scope, version: 2, key: rotated,
                extra: "    deviceAuthentication: {issuer: x, audience: y, hs256Secret: \(shortSecret)}")
            try bad.write(toFile: file, atomically: true, encoding: .utf8)
            let report = await reloader.reload(trigger: "test")
            #expect(report.result == "rejected")
            #expect(report.problems.count == 1)
            #expect(report.problems.first.map { "\($0)" }?.hasPrefix("\(file):") == true)
            // Nothing changed: the old key still works, the new one does not, the adapter is the first one.
            #expect(try await Self.send(api).status == .created)
            #expect(try await Self.send(api, key: rotated).status == .unauthorized)
            #expect((api.hub.configuration.adapters.adapters.first as? GatedAdapter)?.version == 1)
            let health = try await api.client.execute(uri: "/healthz", method: .get)
            let config = try #require(health.json?["config"] as? [String: Any])
            #expect(config["sha256"] as? String == initial.sha256)
            #expect((config["lastReload"] as? [String: Any])?["result"] as? String == "rejected")
            #expect((config["lastReload"] as? [String: Any])?["problems"] as? Int == 1)
            for secret in [rotated, shortSecret, Self.manageKey] {
                #expect(!logs.text.contains(secret), "the log shows a secret")
                #expect(!health.text.contains(secret), "healthz shows a secret")
            }
            #expect(logs.text.contains("configuration reload rejected"))
            #expect(logs.text.contains("\(file):"), "problems are logged with file:line:column")

            // Fixed, the same file applies.
            try Self.yaml(scope: scope, version: 2, key: rotated).write(toFile: file, atomically: true, encoding: .utf8)
            #expect(await reloader.reload(trigger: "test").result == "applied")
            #expect(try await Self.send(api, key: rotated).status == .created)
            #expect(api.runtime.status.snapshot.sha256 == HubsConfiguration.sha256(ofFile: file))
        }
    }

    @Test func theFileWatcherReloadsWhenTheFileOrAReferencedFileChanges() async throws {
        let scope = "watch-\(UUID().uuidString.prefix(8))"
        let directory = NSTemporaryDirectory() + "hub-watch-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/hub.yaml"
        let keyFile = directory + "/manage.key"
        try Self.manageKey.write(toFile: keyFile, atomically: true, encoding: .utf8)
        try Self.yaml(scope: scope).replacingOccurrences(of: "primaryKey: \(Self.manageKey)", with: "primaryKey: {file: manage.key}")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let load: ConfigurationReloader.Load = { Self.read(file) }
        let initial = try load().get()
        #expect(initial.referencedFiles == [keyFile])
        try await APITestHarness.run(configuration: initial) { api in
            let reloader = ConfigurationReloader(
                runtime: api.runtime, file: file, pollInterval: .milliseconds(100), signals: false,
                logger: APITestHarness.quietLogger, load: load)
            let group = ServiceGroup(services: [reloader], logger: APITestHarness.quietLogger)
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                // The key file changes: the rotated key works on the next request.
                let rotated = "rotated-from-file-0123456789"
                try rotated.write(toFile: keyFile, atomically: true, encoding: .utf8)
                #expect(try await Self.waitFor { try await Self.send(api, key: rotated).status == .created })
                #expect(api.runtime.status.snapshot.lastReload?.result == "applied")
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
        }
    }
}
