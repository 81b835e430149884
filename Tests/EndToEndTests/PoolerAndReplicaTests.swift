import Foundation
import HubTestSupport
import Logging
@testable import NotificationHub
import PushEmulator
import Testing

/// Two hub processes on PostgreSQL through PgBouncer in transaction mode (`Scripts/test-pgbouncer.sh`), and reading
/// sends' audiences from a streaming replica (`Scripts/test-replica.sh`). The clusters are small (a few thousand
/// devices): what is proved is where each statement goes, not throughput.
@Suite(.serialized, .oneProcessSuiteAtATime, .timeLimit(.minutes(15))) struct PoolerAndReplicaTests {
    typealias Cluster = MultiNodeTests.Cluster

    /// The storage of a node through PgBouncer of its own in transaction mode, whose database entry sets the hub's
    /// schema (`connect_query`) and which holds 4 server connections for the node's 8 + 3; with `listenURL` the
    /// direct URL of the database when `listens`.
    static func throughPgBouncer(listens: @escaping @Sendable (_ node: Int) -> Bool) async throws -> Cluster.Storage {
        let direct = try await TestPostgres.shared.url()
        return { schema, node in
            let pooler = try await TestPooler.start(mode: .transaction, schema: schema, poolSize: 4)
            return "url: \"\(pooler)\", pooler: transaction, pool: 8" + (listens(node) ? ", listenURL: \"\(direct)\"" : "")
        }
    }

    static func logs(_ cluster: Cluster) -> [String] {
        cluster.logs.map { (try? String(contentsOfFile: $0, encoding: .utf8)) ?? "" }
    }

    /// Both nodes through PgBouncer in transaction mode, each listening on a direct connection (`listenURL`): the
    /// multi-node scenario holds. Both nodes deliver a share of each fan-out and of the per-user sends, each device
    /// receives each notification once.
    @Test(arguments: [0, 1])
    func twoNodesThroughPgBouncerInTransactionModeDeliverEachNotificationOnce(accepting: Int) async throws {
        try await Cluster.run(
            delivery: MultiNodeTests.smallPages, devices: 2_000, users: 100,
            storage: try await Self.throughPgBouncer { _ in true }
        ) { cluster in
            try await MultiNodeTests.shareAFanOutAndPerUserSends(cluster, accepting: accepting)
            let logs = Self.logs(cluster)
            #expect(!logs.joined().contains("not listening for work"), "both nodes listen on listenURL")
            #expect(!logs.joined().contains("prepared statement"), "\(cluster.tails)")
        }
    }

    /// Node B has no `listenURL`: it does not listen (and says so) and finds the work node A accepts at its next
    /// look for work, within a second. It still takes its half of a fan-out, and every device receives each
    /// notification once; the per-user sends may all be delivered by node A before node B looks.
    @Test func aNodeWithoutListenURLTakesItsShareAtItsNextLookForWork() async throws {
        try await Cluster.run(
            delivery: MultiNodeTests.smallPages, devices: 2_000, users: 100,
            storage: try await Self.throughPgBouncer { $0 == 0 }
        ) { cluster in
            try await MultiNodeTests.shareAFanOutAndPerUserSends(cluster, accepting: 0, perUserSpread: false)
            let logs = Self.logs(cluster)
            #expect(!logs[0].contains("not listening for work"), "node A listens on listenURL")
            #expect(logs[1].contains("not listening for work announced by other nodes"), "node B says it does not listen")
        }
    }

    /// Both nodes read sends' audiences from a replica (through a proxy that can cut it off) and write to the
    /// primary. With the replica's replay paused, installations registered since are missed by a send (what a
    /// lagging replica costs); with the replica cut off, audiences are read from the primary (each node warns once)
    /// and every device receives the send; once the replica is back the nodes read it again; once it has caught up,
    /// every device receives again.
    @Test func audiencesComeFromTheReplicaAndFromThePrimaryWhileItIsDown() async throws {
        let direct = try await TestPostgres.shared.url()
        let replicaURL = try await TestReplica.shared.url()
        guard var components = URLComponents(string: replicaURL), let host = components.host, let port = components.port
        else {
            Issue.record("cannot read the replica's URL")
            return
        }
        let proxy = try await TCPProxy.start(to: host, port: port)
        components.port = proxy.port
        let readURL = components.string ?? replicaURL
        let replicated = 1_000
        let later = 300
        try await Cluster.run(
            delivery: MultiNodeTests.smallPages, devices: replicated, users: 0,
            storage: { _, _ in "url: \"\(direct)\", readURL: \"\(readURL)\"" }
        ) { cluster in
            // The test's own handle on the replica (not through the proxy), to pause and resume its replay.
            let control = try await PostgresHubDatabase.open(
                settings: .init(url: direct, schema: cluster.schema, maximumConnections: 2, readURL: replicaURL),
                logger: Logger.forTest("replica-control"))
            func replicaHolds(_ count: Int) async throws -> Bool {
                try await waitUntil(timeout: .seconds(60)) {
                    let rows = try? await control.readOnReplica("SELECT COUNT(*) AS n FROM installations", [])
                    return rows?.first?.int("n") == count
                }
            }
            /// Sends to everyone through node A; returns the successes and the devices reached.
            func send(_ alert: String) async throws -> (successes: Int?, reached: Set<String>, duplicates: Int) {
                let id = try await cluster.send(via: 0, tags: "everyone", alert: alert)
                let record = try await cluster.waitForFinal(id)
                #expect(record?.state == .completed, "\(cluster.tails)")
                let (reached, duplicates) = cluster.duplicates(alert: alert)
                return (record?.summary.count(of: .success), reached, duplicates)
            }
            let replicaDevices = Set((0..<replicated).map(EmulatedAPNs.deviceToken))
            let everyDevice = Set((0..<replicated + later).map(EmulatedAPNs.deviceToken))
            #expect(try await replicaHolds(replicated))
            _ = try await control.readOnReplica("SELECT pg_wal_replay_pause()", [])
            try await MultiNodeTests.prepare(
                url: direct, schema: cluster.schema, devices: later, users: 0, first: replicated)

            // Lagging: only what the replica holds receives the send.
            let lagging = try await send("lagging")
            #expect(lagging.successes == replicated)
            #expect(lagging.reached == replicaDevices, "installations registered after the replica's last replay are missed")

            // Cut off: the primary serves the audiences, each node warns once.
            proxy.cut()
            let down = try await send("replica down")
            #expect(down.successes == replicated + later)
            #expect(down.reached == everyDevice && down.duplicates == 0)
            func warnings(_ node: Int) -> Int {
                HubLogs.lines(in: [cluster.logs[node]]).filter { $0.contains("audience reads fall back to the primary") }.count
            }
            #expect(warnings(0) <= 1 && warnings(1) <= 1 && warnings(0) + warnings(1) >= 1, "\(cluster.tails)")
            #expect(!HubLogs.lines(in: cluster.logs).contains { $0.contains(readURL) }, "no log line names the replica's URL")

            // Back: once the replica is out of its set-aside and its pool has reconnected, every page of a send is
            // read from it again (still paused, so exactly its devices receive it).
            proxy.restore()
            var back = 0
            var served = false
            while !served && back < 20 {
                back += 1
                served = try await send("replica back \(back)").successes == replicated
                if !served { try await Task.sleep(for: .seconds(2)) }
            }
            #expect(served, "the nodes read the replica again after it came back: \(cluster.tails)")
            #expect(HubLogs.lines(in: cluster.logs).contains { $0.contains("served by the replica (storage.postgres.readURL) again") })

            // Caught up: everyone receives it, once.
            _ = try await control.readOnReplica("SELECT pg_wal_replay_resume()", [])
            #expect(try await replicaHolds(replicated + later))
            let caughtUp = try await send("caught up")
            #expect(caughtUp.successes == replicated + later)
            #expect(caughtUp.reached == everyDevice && caughtUp.duplicates == 0)
            print("replica reads: lagging=\(lagging.successes ?? -1) down=\(down.successes ?? -1) back after \(back) sends, caught up=\(caughtUp.successes ?? -1)")
            try await control.close()
            for node in cluster.nodes { #expect(await node.terminate(), "\(node.logTail())") }
        }
        await proxy.stop()
    }
}
