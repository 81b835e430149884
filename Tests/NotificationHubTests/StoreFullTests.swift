import Foundation
import HubTestSupport
@testable import NotificationHub
import Testing

/// A write the database refuses for want of disk space is a ``HubError/Code/storeFull`` that names the cause, and the
/// store's ``StoreCondition`` is degraded from then until a write succeeds with no refusal in the hold time before it.
@Suite struct StoreFullTests {
    /// Makes the current backend's database refuse to grow as a full disk would: SQLite may add no page to its file
    /// (`SQLITE_FULL`); PostgreSQL answers every new notification row with `53100 disk_full`, the error it raises
    /// when it cannot extend a file.
    static func fill(_ database: any HubDatabase) async throws {
        switch TestBackend.current {
        case .sqlite:
            _ = try await database.transaction { connection in
                let pages = try await connection.query("PRAGMA page_count", []).first?.int("page_count") ?? 1
                return try await connection.query("PRAGMA max_page_count = \(pages)", [])
            }
        case .postgres:
            _ = try await database.write(
                """
                CREATE FUNCTION refuse_for_space() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$
                """, [])
            _ = try await database.write(
                "CREATE TRIGGER refuse_for_space BEFORE INSERT ON notifications FOR EACH ROW EXECUTE FUNCTION refuse_for_space()",
                [])
        }
    }

    /// Gives the database room again.
    static func free(_ database: any HubDatabase) async throws {
        switch TestBackend.current {
        case .sqlite:
            _ = try await database.transaction { try await $0.query("PRAGMA max_page_count = 1073741823", []) }
        case .postgres:
            _ = try await database.write("DROP TRIGGER refuse_for_space ON notifications", [])
        }
    }

    /// Sends with bodies large enough to need new pages, until one is refused; the refusal.
    static func sendUntilRefused(_ store: SQLNotificationStore) async throws -> any Error {
        let body = String(repeating: "x", count: 3000)
        for _ in 0..<500 {
            let notification = Notification(format: NotificationFormat("testformat"), body: body, audience: .all)
            do {
                _ = try await store.enqueue(notification, scheduledTime: nil, idempotencyKey: nil)
            } catch {
                return error
            }
        }
        throw HubError(.conflict, "500 sends were stored: the database never refused one")
    }

    @Test(arguments: TestBackend.all)
    func aWriteRefusedForSpaceIsStoreFullAndDegradesTheStoreUntilAWriteSucceeds(backend: TestBackend) async throws {
        try await backend.run {
            let database = try await TestBackend.openDatabase()
            let store = SQLNotificationStore(database: database)
            #expect(database.condition.degraded == nil)
            _ = try await store.enqueue(
                Notification(format: NotificationFormat("testformat"), body: "before", audience: .all), scheduledTime: nil,
                idempotencyKey: nil)
            try await Self.fill(database)

            let error = try await Self.sendUntilRefused(store)
            let refusal = try #require(error as? HubError, "not a HubError: \(error)")
            #expect(refusal.code == .storeFull)
            #expect(refusal.message.contains("disk") && refusal.message.contains("full"), "\(refusal.message)")
            let degraded = try #require(database.condition.degraded)
            #expect(degraded.reason == refusal.message)
            // Reads go on while writes are refused, and leave the store degraded; so does a write that needs no
            // space, moments after the refusal (the disk is still full).
            _ = try await store.recent(after: nil, limit: 5)
            _ = try await database.transaction { try await $0.query("SELECT 1 AS one", []) }
            #expect(database.condition.degraded == degraded)

            try await Self.free(database)
            database.condition.holdSeconds = 0
            _ = try await store.enqueue(
                Notification(format: NotificationFormat("testformat"), body: "after", audience: .all), scheduledTime: nil,
                idempotencyKey: nil)
            #expect(database.condition.degraded == nil)
            try await database.close()
        }
    }

    @Test func otherStoreErrorsAreNotStoreFull() {
        #expect(StoreCondition.storeFull(HubError(.storageFailure, "the connection closed")) == nil)
        #expect(StoreCondition.storeFull(CancellationError()) == nil)
        let full = HubError(.storeFull, "the disk is full")
        #expect(StoreCondition.storeFull(full) == full)
    }
}
