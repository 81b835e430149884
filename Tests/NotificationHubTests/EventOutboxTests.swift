import Foundation
import HubTestSupport
import Logging
import Testing

@testable import NotificationHub

/// The webhook outbox on both databases: the store's triggers write an event per subscribed receiver in the
/// transaction that causes it (none when it rolls back, none when nobody subscribed), and senders lease, retry, give up
/// and replay events.
@Suite struct EventOutboxTests {
    static let format = NotificationFormat("testformat")
    static let later = Date(timeIntervalSince1970: 4_000_000_000)

    static func json(_ text: String) -> [String: Any] {
        ((try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]) ?? [:]
    }

    static func insertFailure(
        _ notificationID: String, outcome: String, installation: String?, on database: any HubDatabase
    ) async throws {
        _ = try await database.write(
            """
            INSERT INTO notification_failures (notification_id, time, platform, outcome, reason, installation_id, handle)
            VALUES (?, ?, 'apns', ?, 'BadDeviceToken', ?, 'handle-1')
            """,
            [.text(notificationID), .float(1_900_000_000.25), .text(outcome), installation.map { .text($0) } ?? .null])
    }

    @Test(arguments: TestBackend.all)
    func eventsAreWrittenInTheChangingTransactionForSubscribedKindsOnly(backend: TestBackend) async throws {
        try await backend.run {
            let database = try await TestBackend.openDatabase()
            defer { Task { try? await database.close() } }
            let outbox = EventOutbox(database: database)
            let notifications = SQLNotificationStore(database: database)
            try await outbox.subscribe([
                ("a", .notificationCompleted), ("b", .notificationCompleted), ("b", .notificationFailed),
                ("b", .channelExpired),
            ])
            let notification = Notification(format: Self.format, body: "x", audience: .all)
            _ = try await notifications.enqueue(notification, scheduledTime: Self.later, idempotencyKey: nil)
            #expect(try await outbox.list(state: nil, before: nil, limit: 10).isEmpty)
            #expect(try await notifications.cancel(id: notification.id, now: Date(timeIntervalSince1970: 1_900_000_000)))
            try await Self.insertFailure(notification.id, outcome: "BadChannel", installation: "i-1", on: database)
            try await Self.insertFailure(notification.id, outcome: "ExpiredChannel", installation: "i-2", on: database)
            try await Self.insertFailure(notification.id, outcome: "ExpiredChannel", installation: nil, on: database)

            let events = try await outbox.list(state: nil, before: nil, limit: 20).reversed()
            let summary = events.map { "\($0.subscription) \($0.event)" }
            #expect(
                summary.sorted() == [
                    "a notification.completed", "b installation.channelExpired", "b notification.completed",
                    "b notification.failed", "b notification.failed", "b notification.failed",
                ])
            // Events come in the order of their causes.
            #expect(summary.prefix(2).allSatisfy { $0.hasSuffix("notification.completed") })
            let completed = Self.json(try #require(events.first { $0.event == "notification.completed" }).data)
            #expect(completed["notificationId"] as? String == notification.id)
            #expect(completed["state"] as? String == "Cancelled")
            #expect(completed["endTime"] as? String == "2030-03-17T17:46:40.000Z")
            #expect(completed["counts"] is [String: Any])
            let expired = try #require(events.first { $0.event == "installation.channelExpired" })
            let data = Self.json(expired.data)
            #expect(data["installationId"] as? String == "i-2")
            #expect(data["pnsHandle"] as? String == "handle-1")
            #expect(data["platform"] as? String == "apns")
            #expect(data["time"] as? String == "2030-03-17T17:46:40.250Z")
            #expect(expired.createdTime.timeIntervalSince1970 == 1_900_000_000.25)
            #expect(events.allSatisfy { $0.state == .pending && $0.attempts == 0 })

            // A change that rolls back leaves no event.
            let other = Notification(format: Self.format, body: "x", audience: .all)
            _ = try await notifications.enqueue(other, scheduledTime: Self.later, idempotencyKey: nil)
            struct Rollback: Error {}
            await #expect(throws: Rollback.self) {
                try await database.transaction { connection in
                    _ = try await connection.query(
                        "UPDATE notifications SET state = 'Cancelled', end_time = 1 WHERE id = ?", [.text(other.id)])
                    throw Rollback()
                }
            }
            #expect(try await outbox.list(state: nil, before: nil, limit: 20).count == 6)

            // Without subscriptions nothing more is written.
            try await outbox.subscribe([])
            #expect(try await notifications.cancel(id: other.id, now: Date(timeIntervalSince1970: 1_900_000_001)))
            #expect(try await outbox.list(state: nil, before: nil, limit: 20).count == 6)

            // An event appended by the hub's own code goes to the subscribers of its kind.
            try await outbox.subscribe([("a", .channelReplaced)])
            try await database.transaction { connection in
                try await EventOutbox.append(
                    .channelReplaced, data: #"{"installationId":"i-3"}"#, time: Date(timeIntervalSince1970: 5),
                    on: connection)
            }
            let replaced = try #require(try await outbox.list(state: nil, before: nil, limit: 1).first)
            #expect(replaced.event == "installation.channelReplaced" && replaced.subscription == "a")
        }
    }

    @Test(arguments: TestBackend.all)
    func eventsAreLeasedRetriedGivenUpAndReplayed(backend: TestBackend) async throws {
        try await backend.run {
            let database = try await TestBackend.openDatabase()
            defer { Task { try? await database.close() } }
            let outbox = EventOutbox(database: database)
            try await outbox.subscribe([("a", .channelReplaced), ("b", .channelReplaced)])
            try await database.transaction { connection in
                for index in 0..<3 {
                    try await EventOutbox.append(
                        .channelReplaced, data: "{\"n\":\(index)}", time: Date(timeIntervalSince1970: 10), on: connection)
                }
            }
            let now = Date(timeIntervalSince1970: 1_000)
            let first = try await outbox.claim(subscriptions: ["a"], owner: "x", now: now, leaseSeconds: 30, limit: 2)
            #expect(first.count == 2)
            #expect(first.allSatisfy { $0.subscription == "a" })
            let second = try await outbox.claim(subscriptions: ["a"], owner: "y", now: now, leaseSeconds: 30, limit: 10)
            #expect(second.count == 1)  // the leased two are not handed out again
            #expect(Set(first.map(\.id)).isDisjoint(with: second.map(\.id)))
            #expect(try await outbox.claim(subscriptions: ["a"], owner: "y", now: now, leaseSeconds: 30, limit: 10).isEmpty)
            // A lease that ran out (its node stopped) is taken over.
            let takenOver = try await outbox.claim(subscriptions: ["a"], owner: "z", now: now + 31, leaseSeconds: 30, limit: 10)
            #expect(takenOver.count == 3)

            let retried = try #require(takenOver.first)
            for other in takenOver.dropFirst() {
                try await outbox.markDelivered(id: other.id, owner: "z", status: 200, now: now + 31)
            }
            // The old owner's answer no longer counts.
            try await outbox.markDelivered(id: retried.id, owner: "x", status: 200, now: now)
            #expect(try await outbox.event(id: retried.id)?.state == .pending)
            try await outbox.markFailed(id: retried.id, owner: "z", status: 503, error: "the receiver answered 503", nextAttempt: now + 60)
            let afterFailure = try #require(try await outbox.event(id: retried.id))
            #expect(afterFailure.attempts == 1 && afterFailure.lastStatus == 503 && afterFailure.state == .pending)
            #expect(try await outbox.claim(subscriptions: ["a"], owner: "z", now: now + 59, leaseSeconds: 30, limit: 10).isEmpty)
            let due = try await outbox.claim(subscriptions: ["a"], owner: "z", now: now + 61, leaseSeconds: 30, limit: 10)
            #expect(due.map(\.id) == [retried.id])

            try await outbox.markFailed(id: retried.id, owner: "z", status: nil, error: "refused", nextAttempt: nil)
            #expect(try await outbox.event(id: retried.id)?.state == .failed)
            #expect(try await outbox.list(state: .failed, before: nil, limit: 10).map(\.id) == [retried.id])
            #expect(try await outbox.claim(subscriptions: ["a"], owner: "z", now: now + 1000, leaseSeconds: 30, limit: 10).isEmpty)

            let replayed = try #require(try await outbox.replay(id: retried.id, now: now + 1000))
            #expect(replayed.state == .pending && replayed.attempts == 0)
            let again = try await outbox.claim(subscriptions: ["a"], owner: "w", now: now + 1000, leaseSeconds: 30, limit: 10)
            #expect(again.map(\.id) == [retried.id])
            try await outbox.markDelivered(id: retried.id, owner: "w", status: 204, now: now + 1001)
            let delivered = try #require(try await outbox.event(id: retried.id))
            #expect(delivered.state == .delivered && delivered.lastStatus == 204 && delivered.attempts == 1)
            #expect(try await outbox.replay(id: 999_999, now: now) == nil)
            // Paging newest first.
            let page = try await outbox.list(state: nil, before: nil, limit: 4)
            #expect(page.count == 4)
            let rest = try await outbox.list(state: nil, before: page.last?.id, limit: 4)
            #expect(rest.count == 2)
            #expect(page.map(\.id) == page.map(\.id).sorted(by: >))

            // Delivered events past their retention are deleted; the pending ones stay.
            let deliveredCount = try await outbox.list(state: .delivered, before: nil, limit: 10).count
            #expect(try await outbox.purgeDelivered(before: now + 1002) == deliveredCount)
            #expect(try await outbox.list(state: .delivered, before: nil, limit: 10).isEmpty)
            #expect(try await outbox.list(state: nil, before: nil, limit: 10).count == 6 - deliveredCount)
        }
    }

    @Test func eventsOutliveTheProcessThatWroteThem() async throws {
        let path = NSTemporaryDirectory() + "outbox-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let logger = Logger.forTest("test")
        let first = try await HubDatabases.open(storage: .sqlite(path: path), logger: logger)
        try await EventOutbox(database: first).subscribe([("a", .notificationCompleted)])
        let notification = Notification(format: Self.format, body: "x", audience: .all)
        let notifications = SQLNotificationStore(database: first)
        _ = try await notifications.enqueue(notification, scheduledTime: Self.later, idempotencyKey: nil)
        #expect(try await notifications.cancel(id: notification.id, now: Date()))
        try await first.close()

        let second = try await HubDatabases.open(storage: .sqlite(path: path), logger: logger)
        let claimed = try await EventOutbox(database: second).claim(
            subscriptions: ["a"], owner: "next", now: Date(), leaseSeconds: 30, limit: 10)
        #expect(claimed.count == 1)
        #expect(Self.json(try #require(claimed.first).data)["notificationId"] as? String == notification.id)
        try await second.close()
    }
}
