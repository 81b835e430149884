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

    /// PostgreSQL cuts a statement name at 63 bytes: two prepared statements whose names share their first 63
    /// bytes would be one name on a connection, and the second could never be prepared.
    @Test func preparedStatementNamesAreDistinctWithinPostgreSQLsLimit() {
        let names = PostgresHubDatabase.preparedNames
        #expect(Set(names.map { $0.utf8.prefix(63).map { $0 } }).count == names.count)
        #expect(names.allSatisfy { $0.utf8.count <= 63 })
    }
}
