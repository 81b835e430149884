import Foundation
import HubTestSupport
import Logging
@testable import NotificationHub
import Testing

/// Sends' audiences read from a streaming replica (`storage.postgres.readURL`, `Scripts/test-replica.sh`), everything
/// else from the primary. With the replica's replay paused, what was written on the primary since is missing from
/// audience reads only: that is what a lagging replica costs a send, and the proof of where each read goes.
@Suite(.serialized) struct PostgresReplicaReadTests {
    static func open(readURL: String, logger: Logger = Logger.forTest("test")) async throws -> PostgresHubDatabase {
        let url = try await TestPostgres.shared.url()
        let schema = "r_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        return try await PostgresHubDatabase.open(
            settings: .init(url: url, schema: String(schema), maximumConnections: 4, readURL: readURL), logger: logger)
    }

    /// Waits until the replica holds `count` installations of the database's schema.
    static func replicaHolds(_ count: Int, _ database: PostgresHubDatabase) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let rows = try? await database.readOnReplica("SELECT COUNT(*) AS n FROM installations", [])
            if rows?.first?.int("n") == count { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    static func installation(_ id: String) -> Installation {
        InstallationStoreTests.installation(id, tags: ["everyone", "user:u0"])
    }

    /// What a send to `everyone` reads (the general plan) and what a send to `user:u0` reads (the one-tag page).
    static func audiences(_ store: SQLInstallationStore) async throws -> (everyone: Int, user: Int) {
        func read(_ tag: String) async throws -> Int {
            try await store.query(
                InstallationQuery(
                    expression: try TagExpression(parsing: tag), platforms: [Platform("test")], includeExpired: false,
                    kinds: .nativeSends, detail: .address),
                after: nil, limit: 100
            ).installations.count
        }
        // A broadcast reads the general plan.
        let everyone = try await store.query(
            InstallationQuery(platforms: [Platform("test")], includeExpired: false, kinds: .nativeSends, detail: .address),
            after: nil, limit: 100
        ).installations.count
        #expect(try await read("everyone") == everyone)
        return (everyone, try await read("user:u0"))
    }

    @Test func sendAudiencesAreReadFromTheReplicaAndEverythingElseFromThePrimary() async throws {
        let replica = try await TestReplica.shared.url()
        let database = try await Self.open(readURL: replica)
        let store = SQLInstallationStore(database: database)
        for index in 0..<5 { _ = try await store.upsert(Self.installation("before\(index)")) }
        #expect(try await Self.replicaHolds(5, database))
        _ = try await database.readOnReplica("SELECT pg_wal_replay_pause()", [])
        do {
            for index in 0..<3 { _ = try await store.upsert(Self.installation("after\(index)")) }
            // A send reads what the replica had replayed when it paused.
            let lagging = try await Self.audiences(store)
            #expect(lagging.everyone == 5 && lagging.user == 5)
            // The API reads the primary: it sees its own writes.
            #expect(try await store.installation(id: "after2") != nil)
            #expect(try await store.query(InstallationQuery(kinds: .installations), after: nil, limit: 100).installations.count == 8)
            #expect(try await store.count(InstallationQuery(expression: .tag("everyone"))) == 8)
        } catch {
            _ = try? await database.readOnReplica("SELECT pg_wal_replay_resume()", [])
            throw error
        }
        _ = try await database.readOnReplica("SELECT pg_wal_replay_resume()", [])
        #expect(try await Self.replicaHolds(8, database))
        let caughtUp = try await Self.audiences(store)
        #expect(caughtUp.everyone == 8 && caughtUp.user == 8)
        try await database.close()
    }

    /// A replica that gives no connection (nothing listens at its address) is set aside: audience reads use the
    /// primary at once, and the node warns once for the outage, not once per read.
    @Test func aReplicaThatDoesNotAnswerIsSetAsideAndAudiencesAreReadFromThePrimary() async throws {
        let logs = CapturedLogs()
        let database = try await Self.open(readURL: "postgres://hub@127.0.0.1:1/postgres", logger: logs.logger())
        #expect(logs.text.contains("the replica (storage.postgres.readURL) does not answer"))
        let store = SQLInstallationStore(database: database)
        for index in 0..<3 { _ = try await store.upsert(Self.installation("i\(index)")) }
        for _ in 0..<3 {
            let read = try await Self.audiences(store)
            #expect(read.everyone == 3 && read.user == 3)
        }
        let warnings = logs.text.components(separatedBy: "audience reads fall back to the primary").count - 1
        #expect(warnings == 1, "\(logs.text)")
        #expect(!logs.text.contains("postgres://"), "no log line names the replica's URL")
        try await database.close()
    }
}
