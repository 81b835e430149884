import HubTestSupport
import Logging
import NotificationHub
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
}
