import Foundation
import HubTestSupport
import Logging
import NIOCore
@testable import NotificationHub
import Testing

/// The per-user path's batch statements on PostgreSQL: audience reads combined into one statement, sends stored and
/// lone partitions finished with one prepared statement per batch. Each answers exactly what the one-at-a-time forms
/// answer.
@Suite struct PostgresBatchStatementTests {
    static let format = NotificationFormat("testformat")

    /// A PostgreSQL store with users `u0`…`u5` (user `uN` has N devices on platform `test`, and one on `other`).
    static func store() async throws -> (SQLInstallationStore, PostgresHubDatabase) {
        let store = try await TestBackend.postgres.run { try await InstallationStoreTests.makeStore() }
        let database = try #require(store.database as? PostgresHubDatabase)
        for user in 0..<6 {
            for device in 0..<user {
                _ = try await store.upsert(InstallationStoreTests.installation("u\(user)d\(device)", tags: ["user:u\(user)"]))
            }
            _ = try await store.upsert(
                Installation(
                    installationID: "u\(user)other", platform: Platform("other"), pushChannel: .handle("o\(user)"),
                    tags: ["user:u\(user)"]))
        }
        return (store, database)
    }

    @Test func combinedAudienceReadsAnswerWhatEachReadAloneAnswers() async throws {
        let (store, database) = try await Self.store()
        let requests: [PostgresAddressPages.Request] =
            (0..<6).map { .init(tag: "user:u\($0)", after: 0, platforms: ["test"], limit: 1000) }
            + [
                .init(tag: "user:u5", after: 0, platforms: ["test"], limit: 2),
                .init(tag: "user:u4", after: 0, platforms: ["test", "other"], limit: 1000),
                .init(tag: "user:nobody", after: 0, platforms: ["test"], limit: 1000),
            ]
        let combined = try await PostgresAddressPages.read(requests, client: database.client, logger: Logger.forTest("test"))
        #expect(combined.count == requests.count)
        for (request, rows) in zip(requests, combined) {
            let alone = try await PostgresAddressPages.read([request], client: database.client, logger: Logger.forTest("test"))
            #expect(rows.map { $0.string("id") } == alone[0].map { $0.string("id") }, "\(request.tag) \(request.platforms)")
        }
        #expect(combined[3].count == 3)
        #expect(combined[6].map { $0.string("id") } == ["u5d0", "u5d1"])
        #expect(combined[7].count == 5)
        #expect(combined[8].isEmpty)
        // A page after a position goes on from there.
        let after = try #require(combined[6].last?.int64("rid"))
        let next = try await PostgresAddressPages.read(
            [.init(tag: "user:u5", after: after, platforms: ["test"], limit: 2), .init(tag: "user:u1", after: 0, platforms: ["test"], limit: 2)],
            client: database.client, logger: Logger.forTest("test"))
        #expect(next[0].map { $0.string("id") } == ["u5d2", "u5d3"])
        #expect(next[1].map { $0.string("id") } == ["u1d0"])
        try await store.database.close()
    }

    @Test func aBatchOfSendsIsStoredAndFinishedWithOneStatementEach() async throws {
        let (store, database) = try await Self.store()
        let now = Date()
        // Split above 3 matches: user u5's send (6 tag rows) is left for a claim to split; u0 has 1, u1 2, u2 3.
        let claim = ClaimRequest(owner: "w1", leaseSeconds: 30, now: now, partitionsPerNode: 4, splitAbove: 3)
        let notifications = try [1, 2, 5, 0].map {
            Notification(format: Self.format, body: "to u\($0)", audience: .tags(try TagExpression(parsing: "user:u\($0)")))
        } + [Notification(format: Self.format, body: "direct", audience: .handles(Platform("test"), [.handle("d")]))]
        let batch = try notifications.map { notification in
            SQLNotificationStore.Enqueue(
                notification: notification, headers: "[]", audience: try SQLNotificationStore.encode(notification.audience),
                claim: claim)
        }
        let stored = try #require(try await SQLNotificationStore.storeSends(batch, database: database))
        #expect(stored.count == batch.count)
        let results = try await SQLNotificationStore.insertJudged(
            batch.map { entry in
                var copy = entry
                copy.notification = Notification(
                    format: Self.format, body: entry.notification.body, audience: entry.notification.audience)
                return copy
            }, database: database)
        #expect(results.map { $0.claimed != nil } == [true, true, false, true, true])
        let notificationStore = SQLNotificationStore(database: database)
        for (index, notification) in notifications.enumerated() {
            let record = try #require(try await notificationStore.record(id: notification.id))
            #expect(record.state == (index == 2 ? .enqueued : .processing))
            #expect(String(buffer: record.notification.body) == String(buffer: notification.body))
        }

        // Lone finishes of the leased ones in one batch; one whose owner lost the lease records nothing.
        var summary = DispatchSummary()
        summary.record(.success, platform: Platform("test"), count: 2)
        let finishing = [0, 1, 3, 4].map { index in
            SQLNotificationStore.Completion(
                id: notifications[index].id, partition: 0, owner: index == 4 ? "w2" : "w1",
                checkpoint: DispatchCheckpoint(summary: index == 1 ? DispatchSummary() : summary, failures: [], cursor: nil),
                time: now + 1, alone: true)
        }
        let finished = try #require(try await SQLNotificationStore.finishAlone(finishing, database: database))
        #expect(finished == [.completed, .noTargetFound, .completed, nil])
        let first = try #require(try await notificationStore.record(id: notifications[0].id))
        #expect(first.state == .completed && first.summary.total == 2 && first.endTime != nil)
        #expect(try await notificationStore.record(id: notifications[4].id)?.state == .processing)
        try await store.database.close()
    }
}
