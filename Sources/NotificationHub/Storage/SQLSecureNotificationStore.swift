import Foundation
import NIOCore

/// The embedded secure notification store, in the hub's database file. Payloads arrive sealed.
public final class SQLSecureNotificationStore: SecureNotificationStore {
    /// The database the store writes to.
    public let database: any HubDatabase

    /// Creates a store on a database opened with ``SQLiteHubDatabase/hubSchema``.
    public init(database: any HubDatabase) {
        self.database = database
    }

    public func create(_ notification: StoredSecureNotification) async throws {
        try await database.transaction { connection in
            _ = try await connection.query(
                """
                INSERT INTO secure_notifications (id, audience, sealed_payload, created_time, expires_time, read_once)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(notification.id), .text(notification.audience),
                    .blob(ByteBuffer(bytes: notification.sealedPayload)),
                    .float(notification.createdAt.timeIntervalSince1970),
                    .float(notification.expiresAt.timeIntervalSince1970), .integer(notification.readOnce ? 1 : 0),
                ])
        }
    }

    public func secureNotification(id: String, now: Date) async throws -> StoredSecureNotification? {
        let rows = try await database.read(
            """
            SELECT id, audience, sealed_payload, created_time, expires_time, read_once, read_time, notification_ids
            FROM secure_notifications WHERE id = ? AND expires_time > ?
            """, [.text(id), .float(now.timeIntervalSince1970)])
        guard let row = rows.first, let id = row.string("id"), let audience = row.string("audience"),
            let sealed = row.blob("sealed_payload")
        else { return nil }
        return StoredSecureNotification(
            id: id, audience: audience, sealedPayload: Data(sealed.readableBytesView),
            createdAt: Date(timeIntervalSince1970: row.double("created_time") ?? 0),
            expiresAt: Date(timeIntervalSince1970: row.double("expires_time") ?? 0),
            readOnce: row.int("read_once") == 1,
            readAt: row.double("read_time").map { Date(timeIntervalSince1970: $0) },
            notificationIDs: row.string("notification_ids").flatMap {
                try? JSONDecoder().decode([String].self, from: Data($0.utf8))
            } ?? [])
    }

    public func setNotificationIDs(_ notificationIDs: [String], of id: String) async throws {
        let text = String(decoding: try JSONEncoder().encode(notificationIDs), as: UTF8.self)
        _ = try await database.write(
            "UPDATE secure_notifications SET notification_ids = ? WHERE id = ?", [.text(text), .text(id)])
    }

    public func markRead(id: String, readOnce: Bool, now: Date) async throws -> Bool {
        try await database.transaction { connection in
            let rows: [SQLRow]
            if readOnce {
                rows = try await connection.query(
                    "DELETE FROM secure_notifications WHERE id = ? AND expires_time > ? RETURNING id",
                    [.text(id), .float(now.timeIntervalSince1970)])
            } else {
                rows = try await connection.query(
                    """
                    UPDATE secure_notifications SET read_time = COALESCE(read_time, ?)
                    WHERE id = ? AND expires_time > ? RETURNING id
                    """,
                    [.float(now.timeIntervalSince1970), .text(id), .float(now.timeIntervalSince1970)])
            }
            return !rows.isEmpty
        }
    }

    @discardableResult
    public func purge(expiredBefore now: Date) async throws -> Int {
        try await database.transaction { connection in
            let rows = try await connection.query(
                "DELETE FROM secure_notifications WHERE expires_time <= ? RETURNING id", [.float(now.timeIntervalSince1970)])
            return rows.count
        }
    }
}
