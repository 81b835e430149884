import Foundation

/// What devices report about the notifications they received (``ReceiptKind``), one row per notification,
/// installation and kind in the hub's store: a repeated report changes nothing.
public struct NotificationReceipts: Sendable {
    let database: any HubDatabase

    /// Creates the receipts of a hub's database.
    public init(database: any HubDatabase) {
        self.database = database
    }

    /// Records a receipt; returns whether it is new (`false`: the device reported this kind before).
    public func record(
        notificationID: String, installationID: String, platform: Platform, kind: ReceiptKind, time: Date
    ) async throws -> Bool {
        let rows = try await database.write(
            """
            INSERT INTO notification_receipts (notification_id, installation_id, kind, platform, time)
            VALUES (?, ?, ?, ?, ?) ON CONFLICT (notification_id, installation_id, kind) DO NOTHING
            RETURNING notification_id
            """,
            [
                .text(notificationID), .text(installationID), .text(kind.rawValue), .text(platform.name),
                .float(time.timeIntervalSince1970),
            ])
        return !rows.isEmpty
    }

    /// A notification's receipts counted per platform and kind (from the table's key: the notification's rows only).
    public func counts(notificationID: String) async throws -> [String: [ReceiptKind: Int]] {
        let rows = try await database.read(
            """
            SELECT platform, kind, CAST(COUNT(*) AS BIGINT) AS n FROM notification_receipts
            WHERE notification_id = ? GROUP BY platform, kind
            """,
            [.text(notificationID)])
        var counts: [String: [ReceiptKind: Int]] = [:]
        for row in rows {
            guard let platform = row.string("platform"), let kind = row.string("kind").flatMap(ReceiptKind.init(rawValue:)),
                let n = row.int("n")
            else { continue }
            counts[platform, default: [:]][kind] = n
        }
        return counts
    }
}

/// What a device reports about a notification.
public enum ReceiptKind: String, Sendable, Hashable, CaseIterable, Codable {
    /// The device received it (a secure push fetch counts as this).
    case delivered
    /// The user opened it.
    case opened
    /// The user dismissed it.
    case dismissed
}
