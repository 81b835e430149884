import Foundation
import HubTestSupport
import NotificationHub
import Testing

/// `storage.postgres` in `hub.yaml`: the pooler in front of the primary, the direct listening connection and the
/// replica for audience reads. `hub validate` reads the same settings, so every mistake here is a precise problem
/// at its key, and no message repeats a URL (they hold passwords).
@Suite struct PostgresStorageConfigurationTests {
    static let password = "pa55-w0rd-in-url"
    static let url = "postgres://hub:\(password)@pgbouncer.internal:6432/hub_demo"
    static let direct = "postgres://hub:\(password)@primary.internal:5432/app"
    static let replica = "postgres://hub:\(password)@replica.internal:5432/app"

    /// The valid configuration with its SQLite storage replaced by `storage.postgres` holding `keys`.
    static func yaml(_ keys: String) -> String {
        ConfigurationTests.valid.replacingOccurrences(
            of: "      sqlite: {path: data/demo.sqlite}\n", with: "      postgres:\n" + keys)
    }

    func load(_ keys: String) throws -> (StorageConfiguration.PostgresSettings, [ConfigurationProblem]) {
        let configuration = try ConfigurationTests().load(Self.yaml(keys))
        let hub = try #require(configuration.hub(named: "demo"))
        guard case .postgres(let settings) = hub.storage else {
            Issue.record("not PostgreSQL storage: \(hub.storage)")
            throw HubError(.invalidConfiguration, "not PostgreSQL")
        }
        return (settings, configuration.warnings)
    }

    func problems(_ keys: String) -> [ConfigurationProblem] {
        ConfigurationTests().problems(Self.yaml(keys))
    }

    @Test func withoutAPoolerTheHubSetsItsSchemaPreparesStatementsAndListensOnItsOwnPool() throws {
        let (settings, warnings) = try load("        url: \(Self.direct)\n")
        #expect(settings.pooler == .none && settings.listenServer == nil && settings.replica == nil)
        #expect(settings.pooler.setsSearchPath && settings.pooler.preparesStatements)
        #expect(settings.listens == settings.server)
        #expect(settings.schema == "hub_demo" && settings.maximumConnections == 10)
        #expect(warnings.isEmpty)
    }

    @Test func everyKeyDecodes() throws {
        let (settings, warnings) = try load("""
                    url: \(Self.url)
                    pool: 40
                    pooler: transaction
                    listenURL: \(Self.direct)
                    readURL: \(Self.replica)

            """)
        #expect(settings.pooler == .transaction)
        #expect(settings.host == "pgbouncer.internal" && settings.port == 6432 && settings.database == "hub_demo")
        #expect(settings.maximumConnections == 40)
        #expect(settings.listenServer?.host == "primary.internal" && settings.listenServer?.database == "app")
        #expect(settings.listenServer?.password == Self.password)
        #expect(settings.replica?.host == "replica.internal" && settings.replica?.port == 5432)
        #expect(settings.listens == settings.listenServer)
        #expect(!settings.pooler.setsSearchPath && !settings.pooler.preparesStatements && !settings.pooler.keepsSessions)
        #expect(warnings.isEmpty, "\(warnings)")
    }

    @Test func aSessionPoolerKeepsPreparedStatementsAndListeningButNotTheStartupSearchPath() throws {
        let (settings, warnings) = try load("        url: \(Self.url)\n        pooler: session\n")
        #expect(!settings.pooler.setsSearchPath && settings.pooler.preparesStatements && settings.pooler.keepsSessions)
        #expect(settings.listens == settings.server)
        #expect(warnings.isEmpty)
    }

    @Test func aTransactionPoolerWithoutListenURLIsWarnedAboutAndTheNodeDoesNotListen() throws {
        let (settings, warnings) = try load("        url: \(Self.url)\n        pooler: transaction\n")
        #expect(settings.listens == nil)
        let warning = try #require(warnings.first)
        #expect(warnings.count == 1)
        #expect(warning.keyPath == "hubs.demo.storage.postgres.pooler")
        #expect(warning.message.contains("does not LISTEN") && warning.message.contains("within a second"))
        #expect(warning.message.contains("set listenURL"))
        #expect(warning.line > 0)
    }

    @Test func anUnknownPoolerIsRefusedWithTheChoices() {
        let found = problems("        url: \(Self.url)\n        pooler: pgbouncer\n")
        let problem = found.first { $0.keyPath == "hubs.demo.storage.postgres.pooler" }
        #expect(problem?.message == "'pgbouncer' is not allowed; use one of: none, session, transaction")
    }

    @Test func malformedListenAndReadURLsAreNamedWithoutTheirText() {
        let found = problems("""
                    url: \(Self.url)
                    pooler: transaction
                    listenURL: "mysql://hub:\(Self.password)@primary.internal/app"
                    readURL: "not a url \(Self.password)"

            """)
        #expect(found.contains {
            $0.keyPath == "hubs.demo.storage.postgres.listenURL"
                && $0.message == "listenURL must look like postgres://user:password@host:5432/database"
        })
        #expect(found.contains {
            $0.keyPath == "hubs.demo.storage.postgres.readURL"
                && $0.message == "readURL must look like postgres://user:password@host:5432/database"
        })
        #expect(!found.map(\.description).joined().contains(Self.password))
    }

    @Test func aListenURLThroughTheTransactionPoolerItselfIsRefused() {
        let found = problems("""
                    url: \(Self.url)
                    pooler: transaction
                    listenURL: "postgres://other:secret@PGBOUNCER.internal:6432/hub_demo"

            """)
        let problem = found.first { $0.keyPath == "hubs.demo.storage.postgres.listenURL" }
        #expect(problem?.message.contains("a LISTEN there ends with its transaction's server connection") == true)
        #expect(problem?.message.contains("not at the pooler") == true)
        #expect(!found.map(\.description).joined().contains("secret"))
    }

    @Test func aReadURLThatIsTheMainAddressIsWarnedAbout() throws {
        let (settings, warnings) = try load("        url: \(Self.direct)\n        readURL: \(Self.direct)\n")
        #expect(settings.replica == settings.server)
        #expect(warnings.map(\.keyPath) == ["hubs.demo.storage.postgres.readURL"])
        #expect(warnings.first?.message.contains("gain nothing") == true)
        #expect(!warnings.map(\.description).joined().contains(Self.password))
    }

    @Test func urlsMayComeFromTheEnvironmentOrAFile() throws {
        let yaml = Self.yaml("        url: \(Self.url)\n        pooler: transaction\n        listenURL: {env: LISTEN_URL}\n")
        let root = ConfigurationNode.parse(
            yaml: yaml, file: "/etc/hub/hub.yaml", environment: ConfigurationTests.environment.merging(["LISTEN_URL": Self.direct]) { $1 })
        let configuration = try HubsConfiguration(root: root, registry: ConfigurationTests.registry)
        guard case .postgres(let settings)? = configuration.hub(named: "demo")?.storage else {
            Issue.record("not PostgreSQL storage")
            return
        }
        #expect(settings.listenServer?.host == "primary.internal")
    }

    @Test func changingThePoolerOrAReplicaNeedsARestart() throws {
        let before = try ConfigurationTests().load(Self.yaml("        url: \(Self.url)\n"))
        let after = try ConfigurationTests().load(Self.yaml("        url: \(Self.url)\n        readURL: \(Self.replica)\n"))
        #expect(before.hub(named: "demo")?.storage != after.hub(named: "demo")?.storage)
        #expect(ConfigurationChanges.needsRestart("hubs.demo:storage"))
    }
}
