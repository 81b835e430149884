import Foundation
import HubTestSupport
import Logging
@testable import NotificationHub
import Synchronization
import Testing

/// The PostgreSQL database through PgBouncer 1.18 (`Scripts/test-pgbouncer.sh`), which keeps no prepared statement
/// across server connections and refuses the `search_path` startup parameter. In transaction mode each transaction
/// may run on another server connection, so every fixed statement runs unnamed, the schema comes from the pooler's
/// database entry (`connect_query`), and the node listens only on a direct connection (`listenURL`).
@Suite(.serialized) struct PostgresPoolerTests {
    static let format = NotificationFormat("testformat")

    static func freshSchema() -> String {
        "p_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
    }

    /// A database on `schema` through `url` with a pool of 8 connections: more than PgBouncer's
    /// `default_pool_size` of 2, so that one client connection's statements run on several server connections.
    static func open(
        url: String, schema: String, pooler: StorageConfiguration.PostgresSettings.Pooler, listenURL: String? = nil,
        logger: Logger = Logger.forTest("test")
    ) async throws -> PostgresHubDatabase {
        try await PostgresHubDatabase.open(
            settings: .init(url: url, schema: schema, maximumConnections: 8, pooler: pooler, listenURL: listenURL),
            logger: logger)
    }

    /// Every fixed statement, from many connections at once: installations stored one by one
    /// (`hub_put_installation`), sends leased as they are stored (alone and in batches), their audiences read (alone
    /// and combined), their lone partitions finished (alone and in batches), and a send that waits for a claim
    /// claimed and completed.
    static func storeClaimAndFinish(on database: any HubDatabase) async throws {
        let store = SQLInstallationStore(database: database)
        let notifications = SQLNotificationStore(database: database)
        let users = 24
        try await withThrowingTaskGroup(of: Void.self) { group in
            for user in 0..<users {
                group.addTask {
                    for device in 0..<2 {
                        _ = try await store.upsert(
                            InstallationStoreTests.installation("u\(user)d\(device)", tags: ["user:u\(user)"]))
                    }
                }
            }
            try await group.waitForAll()
        }
        let now = Date()
        let lease = ClaimRequest(owner: "w1", leaseSeconds: 30, now: now, partitionsPerNode: 4, splitAbove: 100)
        for round in 0..<3 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for user in 0..<users {
                    group.addTask {
                        let notification = Notification(
                            format: Self.format, body: "round \(round)",
                            audience: .tags(try TagExpression(parsing: "user:u\(user)")))
                        let result = try await notifications.enqueue(
                            notification, scheduledTime: nil, idempotencyKey: nil, claim: lease)
                        let work = try #require(result.claimed, "a send stored with a lease is leased")
                        let page = try await store.query(
                            InstallationQuery(
                                expression: .tag("user:u\(user)"), platforms: [Platform("test")], includeExpired: false,
                                kinds: .nativeSends, detail: .address),
                            after: nil, limit: 100)
                        #expect(Set(page.installations.map(\.installationID)) == ["u\(user)d0", "u\(user)d1"])
                        var summary = DispatchSummary()
                        summary.record(.success, platform: Platform("test"), count: page.installations.count)
                        let final = try await notifications.complete(
                            id: result.id, partition: work.partition, owner: "w1",
                            DispatchCheckpoint(summary: summary, failures: [], cursor: nil), now: now, alone: true)
                        #expect(final == .completed)
                    }
                }
                try await group.waitForAll()
            }
        }
        // A send that waits for a claim: claimed, split-judged and completed in transactions.
        let waiting = try await notifications.enqueue(
            Notification(format: Self.format, body: "claimed", audience: .tags(try TagExpression(parsing: "user:u0"))),
            scheduledTime: nil, idempotencyKey: nil)
        let claims = try await notifications.claim(owner: "w2", leaseSeconds: 30, now: now, partitions: 1, limit: 8)
        guard case .work(let work)? = claims.first else {
            Issue.record("the waiting send is claimed: \(claims)")
            return
        }
        #expect(work.record.notification.id == waiting)
        var summary = DispatchSummary()
        summary.record(.success, platform: Platform("test"), count: 2)
        #expect(
            try await notifications.complete(
                id: waiting, partition: work.partition, owner: "w2",
                DispatchCheckpoint(summary: summary, failures: [], cursor: nil), now: now) == .completed)
        let record = try await notifications.record(id: waiting)
        #expect(record?.state == .completed && record?.summary.count(of: .success) == 2)
        #expect(try await store.count(InstallationQuery()) == users * 2)
    }

    @Test func aTransactionPoolerStoresClaimsAndFinishesSendsWithUnnamedStatements() async throws {
        let schema = Self.freshSchema()
        let pooler = try await TestPooler.start(mode: .transaction, schema: schema, poolSize: 2)
        let database = try await Self.open(url: pooler, schema: schema, pooler: .transaction)
        #expect(!database.preparesStatements)
        do {
            try await Self.storeClaimAndFinish(on: database)
        } catch {
            // The server's own words (a statement prepared on one server connection and run on another fails).
            Issue.record("through the pooler: \(String(reflecting: error))")
            throw error
        }
        // Nothing of the hub's was left prepared on a server connection.
        let prepared = try await database.read(
            "SELECT COUNT(*) AS n FROM pg_prepared_statements WHERE name LIKE 'hub_%'", [])
        #expect(prepared.first?.int("n") == 0)
        try await database.close()
    }

    @Test func aSessionPoolerKeepsStatementsPreparedAndListensOnItsOwnPool() async throws {
        let schema = Self.freshSchema()
        let pooler = try await TestPooler.start(mode: .session, schema: schema, poolSize: 20)
        let database = try await Self.open(url: pooler, schema: schema, pooler: .session)
        #expect(database.preparesStatements)
        try await Self.storeClaimAndFinish(on: database)
        try await Self.expectWoken(database)
        try await database.close()
    }

    /// The control: the same database keeping its statements prepared (as without a pooler) behind a pooler in
    /// transaction mode fails. With one server connection, a second client connection's first run of a statement
    /// prepares it again where the first one did.
    @Test func preparedStatementsBehindATransactionPoolerFail() async throws {
        let schema = Self.freshSchema()
        let pooler = try await TestPooler.start(mode: .transaction, schema: schema, poolSize: 1)
        let first = try await Self.open(url: pooler, schema: schema, pooler: .session)
        let second = try await Self.open(url: pooler, schema: schema, pooler: .session)
        let a = SQLInstallationStore(database: first)
        let b = SQLInstallationStore(database: second)
        _ = try await a.upsert(InstallationStoreTests.installation("a"))
        await #expect(throws: (any Error).self) { _ = try await b.upsert(InstallationStoreTests.installation("b")) }
        try await first.close()
        try await second.close()

        // The same two databases without prepared statements both write.
        let third = try await Self.open(url: pooler, schema: schema, pooler: .transaction)
        let fourth = try await Self.open(url: pooler, schema: schema, pooler: .transaction)
        _ = try await SQLInstallationStore(database: third).upsert(InstallationStoreTests.installation("c"))
        _ = try await SQLInstallationStore(database: fourth).upsert(InstallationStoreTests.installation("d"))
        #expect(try await SQLInstallationStore(database: third).installation(id: "d") != nil)
        try await third.close()
        try await fourth.close()
    }

    /// Behind a pooler the hub sends no `search_path`: a database entry that sets none fails at open, before any
    /// table is created, with what to set and where.
    @Test func aPoolerThatSetsNoSchemaFailsAtOpenWithTheFix() async throws {
        let schema = Self.freshSchema()
        let pooler = try await TestPooler.start(mode: .transaction, schema: nil)
        let error = await #expect(throws: HubError.self) {
            _ = try await Self.open(url: pooler, schema: schema, pooler: .transaction)
        }
        #expect(error?.code == .invalidConfiguration)
        let message = error?.message ?? ""
        #expect(message.hasPrefix("storage.postgres.url: the hub's schema is '\(schema)' but on its connections current_schema() is 'public'"), "\(message)")
        #expect(message.contains("connect_query='SET search_path = \(schema)'"))
        #expect(message.contains("ALTER ROLE hub IN DATABASE postgres SET search_path = \(schema)"))
        // Nothing was created: the schema's creation rolled back with the check.
        let direct = try await TestBackend.postgres.run { try await TestBackend.openDatabase() }
        let schemas = try await direct.read(
            "SELECT COUNT(*) AS n FROM information_schema.schemata WHERE schema_name = ?", [.text(schema)])
        #expect(schemas.first?.int("n") == 0)
        try await direct.close()
    }

    /// Behind a pooler the replica's connections get their schema from the pooler's side too: a reachable
    /// `readURL` whose search path does not name the hub's schema fails at open, naming `readURL`.
    @Test func aReplicaBehindAPoolerThatSetsNoSchemaFailsAtOpen() async throws {
        let schema = Self.freshSchema()
        let pooler = try await TestPooler.start(mode: .session, schema: schema, poolSize: 4)
        let unset = try await TestPooler.start(mode: .session, schema: nil, poolSize: 4)
        let error = await #expect(throws: HubError.self) {
            _ = try await PostgresHubDatabase.open(
                settings: .init(url: pooler, schema: schema, maximumConnections: 4, pooler: .session, readURL: unset),
                logger: Logger.forTest("test"))
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.hasPrefix("storage.postgres.readURL: the hub's schema is '\(schema)' but on its connections the search_path is") == true, "\(String(describing: error))")
        #expect(error?.message.contains("connect_query='SET search_path = \(schema)'") == true)
    }

    /// Calls `listenForWork` until it has started, announces work from another sender, and expects to be woken.
    static func expectWoken(_ database: PostgresHubDatabase) async throws {
        let (senders, continuation) = AsyncStream<String>.makeStream()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await database.listenForWork { continuation.yield($0) } }
            var iterator = senders.makeAsyncIterator()
            // The first wake-up (empty sender) says listening has started.
            #expect(await iterator.next() == "")
            try await database.transaction { try await database.notifyWork(from: "node-b", on: $0) }
            #expect(await iterator.next() == "node-b")
            group.cancelAll()
        }
    }

    @Test func aTransactionPoolerListensOnlyOnTheDirectListenURL() async throws {
        let schema = Self.freshSchema()
        let pooler = try await TestPooler.start(mode: .transaction, schema: schema)
        let direct = try await TestPostgres.shared.url()
        let listening = try await Self.open(url: pooler, schema: schema, pooler: .transaction, listenURL: direct)
        #expect(listening.listener != nil)
        try await Self.expectWoken(listening)
        try await listening.close()

        // Without listenURL the node does not listen (it says so), and listening returns at once.
        let logs = CapturedLogs()
        let deaf = try await Self.open(url: pooler, schema: schema, pooler: .transaction, logger: logs.logger())
        try await deaf.listenForWork { _ in Issue.record("woken without listening") }
        #expect(logs.text.contains("not listening for work announced by other nodes"))
        try await deaf.close()
    }

    /// A listenURL that is itself a pooler in transaction mode loses what it listens for: opening says so.
    @Test func aListenURLThroughATransactionPoolerFailsAtOpen() async throws {
        let schema = Self.freshSchema()
        let pooler = try await TestPooler.start(mode: .transaction, schema: schema)
        let otherPooler = try await TestPooler.start(mode: .transaction, schema: schema)
        let error = await #expect(throws: HubError.self) {
            _ = try await Self.open(url: pooler, schema: schema, pooler: .transaction, listenURL: otherPooler)
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.hasPrefix("storage.postgres.listenURL: a notification sent through url did not arrive on listenURL") == true, "\(String(describing: error))")
    }
}
