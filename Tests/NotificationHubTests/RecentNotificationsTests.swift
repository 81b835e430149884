import Foundation
import HubTestSupport
import NotificationHub
import Testing

/// The store's list of recent notifications, newest first, on both databases.
@Suite struct RecentNotificationsTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    func withStore<T: Sendable>(_ body: (SQLNotificationStore) async throws -> T) async throws -> T {
        let database = try await TestBackend.openDatabase()
        do {
            let result = try await body(SQLNotificationStore(database: database))
            try await database.close()
            return result
        } catch {
            try? await database.close()
            throw error
        }
    }

    func notification(_ id: String, at offset: TimeInterval, audience: Audience = .all) -> NotificationHub.Notification {
        NotificationHub.Notification(id: id, format: .apple, body: #"{"aps":{}}"#, audience: audience, createdAt: Self.start + offset)
    }

    @Test(arguments: TestBackend.all)
    func pagesAreNewestFirstAcrossStatesWithTiesByID(backend: TestBackend) async throws {
        try await backend.run {
            try await withStore { store in
                // n1 is claimed (Processing), n2 scheduled, n3 cancelled, n4–n6 enqueued; n5 and n6 tie on time.
                _ = try await store.enqueue(notification("n1", at: 1), scheduledTime: nil, idempotencyKey: nil)
                _ = try await store.enqueue(
                    notification("n2", at: 2, audience: .tags(.tag("sports"))), scheduledTime: Self.start + 3600,
                    idempotencyKey: nil)
                _ = try await store.enqueue(notification("n3", at: 3), scheduledTime: nil, idempotencyKey: nil)
                _ = try await store.enqueue(notification("n4", at: 4), scheduledTime: nil, idempotencyKey: nil)
                _ = try await store.enqueue(notification("n5", at: 5), scheduledTime: nil, idempotencyKey: nil)
                _ = try await store.enqueue(notification("n6", at: 5), scheduledTime: nil, idempotencyKey: nil)
                let claimed = try await store.claim(owner: "w", leaseSeconds: 60, now: Self.start + 10, partitions: 1)
                #expect(claimed?.work?.record.notification.id == "n1")
                #expect(try await store.cancel(id: "n3", now: Self.start + 10))
                var summary = DispatchSummary()
                summary.record(.success, platform: .apns, count: 3)
                summary.record(.expiredChannel, platform: .apns, count: 1)
                #expect(
                    try await store.recordCheckpoint(
                        id: "n1", partition: 0, owner: "w", DispatchCheckpoint(summary: summary, failures: [], cursor: nil)))

                var ids: [String] = []
                var pages = 0
                var cursor: RecentNotificationCursor?
                var byID: [String: NotificationOverview] = [:]
                repeat {
                    let page = try await store.recent(after: cursor, limit: 2)
                    ids += page.notifications.map(\.id)
                    for overview in page.notifications { byID[overview.id] = overview }
                    cursor = page.next
                    pages += 1
                } while cursor != nil && pages < 10
                #expect(ids == ["n6", "n5", "n4", "n3", "n2", "n1"])
                #expect(pages == 3)
                #expect(byID["n1"]?.state == .processing)
                #expect(byID["n1"]?.summary == summary)
                #expect(byID["n1"]?.startTime == Self.start + 10)
                #expect(byID["n2"]?.state == .scheduled)
                #expect(byID["n2"]?.scheduledTime == Self.start + 3600)
                #expect(byID["n2"]?.audience == .tags(.tag("sports")))
                #expect(byID["n3"]?.state == .cancelled)
                #expect(byID["n4"]?.state == .enqueued && byID["n4"]?.format == .apple)
                #expect(byID["n4"]?.enqueueTime == Self.start + 4)

                let all = try await store.recent(after: nil, limit: 100)
                #expect(all.notifications.map(\.id) == ["n6", "n5", "n4", "n3", "n2", "n1"])
                #expect(all.next == nil)
            }
        }
    }

    @Test func continuationTokensRoundTripAndRejectOthers() throws {
        let cursor = RecentNotificationCursor(enqueueTime: 1_800_000_000.123456, id: "abc.def")
        #expect(try RecentNotificationCursor(token: cursor.token) == cursor)
        for token in ["", "abc", ".id", "zz!.id", "12."] {
            #expect(throws: HubError.self) { try RecentNotificationCursor(token: token) }
        }
    }

    @Test(arguments: TestBackend.all)
    func anEmptyStoreHasNoRecentNotifications(backend: TestBackend) async throws {
        try await backend.run {
            try await withStore { store in
                let page = try await store.recent(after: nil, limit: 10)
                #expect(page.notifications.isEmpty && page.next == nil)
            }
        }
    }
}
