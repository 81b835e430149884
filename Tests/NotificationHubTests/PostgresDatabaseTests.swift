import Foundation
import HubTestSupport
import Logging
@testable import NotificationHub
import Testing

/// Opening the PostgreSQL database.
@Suite struct PostgresDatabaseTests {
    /// The pools' run loops start before the migrations lease their first connection, so opening logs no warning
    /// about a lease before `run()`.
    @Test func openingLeasesNoConnectionBeforeThePoolsRun() async throws {
        for _ in 0..<5 {
            let logs = CapturedLogs()
            try await TestBackend.postgres.run {
                let database = try await TestBackend.openDatabase(logger: logs.logger())
                try await database.close()
            }
            #expect(!logs.text.contains("hasn't been called yet"), "\(logs.text)")
            #expect(logs.text.contains("applied schema migration"))
        }
    }

    /// `?` placeholders become `$1`, `$2`, … in order; other text, multi-byte characters included, is kept.
    @Test func placeholdersAreNumberedInOrder() {
        #expect(PostgresHubDatabase.Executor.numbered("SELECT ? + ?, 'é' FROM t WHERE a = ?") == "SELECT $1 + $2, 'é' FROM t WHERE a = $3")
        #expect(PostgresHubDatabase.Executor.numbered("") == "")
        let many = PostgresHubDatabase.Executor.numbered(Array(repeating: "?", count: 12).joined(separator: "ü"))
        #expect(many == (1...12).map { "$\($0)" }.joined(separator: "ü"))
    }

    /// Without a pooler the fixed statements stay prepared on each connection (parsed and planned once per
    /// connection); a pooler in transaction mode runs the same text unnamed (`PostgresPoolerTests`).
    @Test func withoutAPoolerTheFixedStatementsArePreparedOnTheConnection() async throws {
        let url = try await TestPostgres.shared.url()
        let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        // One connection: what is prepared on it is what the next read sees.
        let database = try await PostgresHubDatabase.open(
            settings: .init(url: url, schema: String(schema), maximumConnections: 1), logger: Logger.forTest("test"))
        #expect(database.preparesStatements)
        let store = SQLInstallationStore(database: database)
        _ = try await store.upsert(InstallationStoreTests.installation("a", tags: ["user:a"]))
        _ = try await store.query(
            InstallationQuery(
                expression: .tag("user:a"), platforms: [Platform("test")], includeExpired: false, kinds: .nativeSends,
                detail: .address),
            after: nil, limit: 10)
        let prepared = try await database.read("SELECT name FROM pg_prepared_statements ORDER BY name", [])
        #expect(prepared.compactMap { $0.string("name") } == [PostgresHubDatabase.AddressPage.name, PostgresHubDatabase.PutInstallation.name])
        try await database.close()
    }

    /// PostgreSQL cuts a statement name at 63 bytes: two prepared statements whose names share their first 63
    /// bytes would be one name on a connection, and the second could never be prepared.
    @Test func preparedStatementNamesAreDistinctWithinPostgreSQLsLimit() {
        let names = PostgresHubDatabase.preparedNames
        #expect(Set(names.map { $0.utf8.prefix(63).map { $0 } }).count == names.count)
        #expect(names.allSatisfy { $0.utf8.count <= 63 })
    }
}
