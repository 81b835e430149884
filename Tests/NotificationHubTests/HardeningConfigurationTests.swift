import Foundation
import HubTestSupport
import NotificationHub
import Testing

/// `hub.yaml` mistakes that must not leak secrets or let hubs share data.
@Suite struct HardeningConfigurationTests {
    static let registry = AdapterRegistry([RecordingAdapterFactory.self])

    func problems(_ yaml: String) -> [ConfigurationProblem] {
        let root = ConfigurationNode.parse(yaml: yaml, file: "/etc/hub/hub.yaml", environment: [:])
        do {
            try root.throwIfProblems()
            _ = try HubsConfiguration(root: root, registry: Self.registry)
            return []
        } catch {
            return error.problems
        }
    }

    static func hub(_ name: String, key: String = "a-perfectly-fine-key-0123", storage: String) -> String {
        """
          \(name):
            keys: [{name: k, rights: [Listen], primaryKey: "\(key)"}]
            storage: \(storage)
            adapters: [{type: recording, apiKey: abc}]
        """
    }

    @Test func anUnterminatedReferenceDoesNotPrintTheSecret() {
        let yaml = "hubs:\n" + Self.hub("demo", key: "SUPERSECRET-${-0123456789", storage: "{sqlite: {path: a.sqlite}}")
        let found = problems(yaml)
        #expect(found.contains { $0.message.contains("unterminated") })
        #expect(!found.description.contains("SUPERSECRET"))
    }

    @Test func aReferenceThatIsNotANameDoesNotPrintIt() {
        let yaml = "hubs:\n" + Self.hub("demo", key: "x${SUPER SECRET VALUE}y0123456789", storage: "{sqlite: {path: a.sqlite}}")
        let found = problems(yaml)
        #expect(!found.isEmpty)
        #expect(!found.description.contains("SUPER SECRET"))
    }

    @Test func aControlCharacterDoesNotPrintTheSourceLine() {
        let yaml = "hubs:\n" + Self.hub("demo", key: "SUPERSECRET\u{01}0123456789", storage: "{sqlite: {path: a.sqlite}}")
        let found = problems(yaml)
        #expect(!found.isEmpty)
        #expect(!found.description.contains("SUPERSECRET"))
        #expect(found.allSatisfy { $0.line > 0 })
    }

    @Test func hubsCannotShareAStore() {
        let shared = "hubs:\n" + Self.hub("one", storage: "{sqlite: {path: data/x.sqlite}}") + "\n"
            + Self.hub("two", storage: "{sqlite: {path: data/../data/x.sqlite}}")
        #expect(problems(shared).contains { $0.message.contains("same store as hub 'one'") })
        let separate = "hubs:\n" + Self.hub("one", storage: "{sqlite: {path: data/x.sqlite}}") + "\n"
            + Self.hub("two", storage: "{sqlite: {path: data/y.sqlite}}")
        #expect(problems(separate).isEmpty)
        let memory = "hubs:\n" + Self.hub("one", storage: "{sqlite: {path: \":memory:\"}}") + "\n"
            + Self.hub("two", storage: "{sqlite: {path: \":memory:\"}}")
        #expect(problems(memory).isEmpty)
    }

    @Test func serverLimitsHaveSafeDefaultsAndAreRead() throws {
        let defaults = ServerConfiguration()
        #expect(defaults.maximumConnections == 4096 && defaults.requestHeaderTimeoutSeconds == 10)
        #expect(defaults.requestBodyTimeoutSeconds == 30 && defaults.idleTimeoutSeconds == 60)
        #expect(defaults.maximumBatchRequestBytes == 1_048_576)
        let yaml = """
            server: {maximumConnections: 50, requestHeaderTimeoutSeconds: 2, requestBodyTimeoutSeconds: 3, idleTimeoutSeconds: 4, maximumBatchRequestBytes: 200000}
            hubs:
            """ + "\n" + Self.hub("demo", storage: "{sqlite: {path: a.sqlite}}")
        let root = ConfigurationNode.parse(yaml: yaml, file: "/etc/hub/hub.yaml", environment: [:])
        let server = try HubsConfiguration(root: root, registry: Self.registry).server
        #expect(server.maximumConnections == 50 && server.requestHeaderTimeoutSeconds == 2)
        #expect(server.requestBodyTimeoutSeconds == 3 && server.idleTimeoutSeconds == 4)
        #expect(server.maximumBatchRequestBytes == 200_000)
    }
}
