import Foundation

/// The failure feed: the devices each notification failed to reach, and the named positions of its consumers.
extension SQLNotificationStore {
    public func failures(id: String, after cursor: Int64?, limit: Int) async throws -> FeedbackPage {
        try await failurePage(
            where: "notification_id = ? AND seq > ?", [.text(id), .integer(Int(cursor ?? 0))], limit: limit)
    }

    public func allFailures(after cursor: Int64?, limit: Int) async throws -> FeedbackPage {
        try await failurePage(where: "seq > ?", [.integer(Int(cursor ?? 0))], limit: limit)
    }

    func failurePage(where condition: String, _ binds: [SQLValue], limit: Int) async throws -> FeedbackPage {
        let rows = try await database.read(
            """
            SELECT seq, notification_id, time, platform, outcome, reason, installation_id, handle
            FROM notification_failures WHERE \(condition) ORDER BY seq LIMIT ?
            """, binds + [.integer(limit + 1)])
        let more = rows.count > limit
        let failures = rows.prefix(limit).map { row in
            DeliveryFailure(
                time: Date(timeIntervalSince1970: row.double("time") ?? 0),
                platform: Platform(row.string("platform") ?? ""),
                outcome: Outcome(row.string("outcome") ?? ""), reason: row.string("reason"),
                installationID: row.string("installation_id"), handle: row.string("handle") ?? "",
                notificationID: row.string("notification_id"))
        }
        let last = rows.prefix(limit).last?.int64("seq")
        return FeedbackPage(failures: failures, next: more ? last : nil, last: last)
    }

    public func position(_ name: String) async throws -> Int64? {
        let rows = try await database.read("SELECT value FROM hub_positions WHERE name = ?", [.text(name)])
        return rows.first?.int64("value")
    }

    public func setPosition(_ name: String, to value: Int64) async throws {
        try await database.transaction { connection in
            _ = try await connection.query(
                "INSERT INTO hub_positions (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                [.text(name), .integer(Int(value))])
        }
    }
}
