import Foundation
import NIOCore

/// The embedded notification store, in the same database file as the installations.
public final class SQLNotificationStore: NotificationStore {
    /// The database the store writes to.
    public let database: any HubDatabase

    /// Creates a store on a database opened with ``SQLiteHubDatabase/hubSchema``.
    public init(database: any HubDatabase) {
        self.database = database
    }

    static let columns =
        "id, format, body, headers, audience, state, enqueue_time, scheduled_time, start_time, end_time, counts"

    public func enqueue(_ notification: Notification, scheduledTime: Date?, idempotencyKey: String?) async throws -> String {
        let headers = String(decoding: try JSONEncoder().encode(notification.headers), as: UTF8.self)
        let audience = try Self.encode(notification.audience)
        return try await database.transaction { connection in
            if let idempotencyKey {
                let existing = try await connection.query(
                    "SELECT id FROM notifications WHERE idempotency_key = ?", [.text(idempotencyKey)])
                if let id = existing.first?.string("id") { return id }
            }
            _ = try await connection.query(
                """
                INSERT INTO notifications (id, format, body, headers, audience, state, enqueue_time, scheduled_time, idempotency_key)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(notification.id), .text(notification.format.name), .blob(notification.body), .text(headers),
                    .text(audience),
                    .text(scheduledTime == nil ? NotificationState.enqueued.name : NotificationState.scheduled.name),
                    .float(notification.createdAt.timeIntervalSince1970),
                    scheduledTime.map { .float($0.timeIntervalSince1970) } ?? .null,
                    idempotencyKey.map { .text($0) } ?? .null,
                ])
            return notification.id
        }
    }

    public func claim(owner: String, leaseSeconds: Double, now: Date) async throws -> NotificationRecord? {
        let time = now.timeIntervalSince1970
        // On PostgreSQL, nodes claiming at once skip each other's locked rows instead of waiting for them.
        let skipLocked = database.dialect == .postgres ? " FOR UPDATE SKIP LOCKED" : ""
        return try await database.transaction { connection in
            let rows = try await connection.query(
                """
                UPDATE notifications
                SET state = 'Processing', lease_owner = ?, lease_expires = ?, start_time = COALESCE(start_time, ?)
                WHERE id = (
                    SELECT id FROM notifications
                    WHERE state = 'Enqueued'
                       OR (state = 'Scheduled' AND scheduled_time <= ?)
                       OR (state = 'Processing' AND lease_expires < ?)
                    ORDER BY COALESCE(scheduled_time, enqueue_time) LIMIT 1\(skipLocked))
                RETURNING \(Self.columns)
                """,
                [.text(owner), .float(time + leaseSeconds), .float(time), .float(time), .float(time)])
            return try rows.first.map(Self.decode)
        }
    }

    public func renewLease(id: String, owner: String, leaseSeconds: Double, now: Date) async throws -> Bool {
        try await database.transaction { connection in
            let rows = try await connection.query(
                "UPDATE notifications SET lease_expires = ? WHERE id = ? AND lease_owner = ? AND state = 'Processing' RETURNING id",
                [.float(now.timeIntervalSince1970 + leaseSeconds), .text(id), .text(owner)])
            return !rows.isEmpty
        }
    }

    public func recordCheckpoint(id: String, owner: String, _ checkpoint: DispatchCheckpoint) async throws -> Bool {
        try await database.transaction { connection in
            let rows = try await connection.query(
                "SELECT counts FROM notifications WHERE id = ? AND lease_owner = ? AND state = 'Processing'",
                [.text(id), .text(owner)])
            guard let row = rows.first else { return false }
            var summary = try Self.decodeSummary(row.string("counts") ?? "{}")
            summary.merge(checkpoint.summary)
            _ = try await connection.query(
                "UPDATE notifications SET counts = ?, cursor = COALESCE(?, cursor) WHERE id = ?",
                [.text(try Self.encode(summary)), checkpoint.cursor.map { .integer(Int($0.position)) } ?? .null, .text(id)])
            for chunk in stride(from: 0, to: checkpoint.failures.count, by: 100) {
                let slice = checkpoint.failures[chunk..<min(chunk + 100, checkpoint.failures.count)]
                var binds: [SQLValue] = []
                binds.reserveCapacity(slice.count * 7)
                for failure in slice {
                    binds += [
                        .text(id), .float(failure.time.timeIntervalSince1970), .text(failure.platform.name),
                        .text(failure.outcome.name), failure.reason.map { .text($0) } ?? .null,
                        failure.installationID.map { .text($0) } ?? .null, .text(failure.handle),
                    ]
                }
                let values = Array(repeating: "(?, ?, ?, ?, ?, ?, ?)", count: slice.count).joined(separator: ", ")
                _ = try await connection.query(
                    """
                    INSERT INTO notification_failures (notification_id, time, platform, outcome, reason, installation_id, handle)
                    VALUES \(values)
                    """, binds)
            }
            return true
        }
    }

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

    public func progress(id: String) async throws -> (summary: DispatchSummary, cursor: InstallationCursor?) {
        let rows = try await database.read("SELECT counts, cursor FROM notifications WHERE id = ?", [.text(id)])
        guard let row = rows.first else { return (DispatchSummary(), nil) }
        let summary = try Self.decodeSummary(row.string("counts") ?? "{}")
        let cursor = row.int("cursor").map { InstallationCursor(position: Int64($0)) }
        return (summary, cursor)
    }

    public func finish(id: String, owner: String, state: NotificationState, summary: DispatchSummary, now: Date) async throws {
        let counts = try Self.encode(summary)
        try await database.transaction { connection in
            _ = try await connection.query(
                """
                UPDATE notifications SET state = ?, counts = ?, end_time = ?, lease_owner = NULL, lease_expires = NULL
                WHERE id = ? AND lease_owner = ?
                """,
                [.text(state.name), .text(counts), .float(now.timeIntervalSince1970), .text(id), .text(owner)])
        }
    }

    public func record(id: String) async throws -> NotificationRecord? {
        let rows = try await database.read("SELECT \(Self.columns) FROM notifications WHERE id = ?", [.text(id)])
        return try rows.first.map(Self.decode)
    }

    public func cancel(id: String, now: Date) async throws -> Bool {
        try await database.transaction { connection in
            let rows = try await connection.query(
                """
                UPDATE notifications SET state = 'Cancelled', end_time = ?
                WHERE id = ? AND state IN ('Enqueued', 'Scheduled') RETURNING id
                """,
                [.float(now.timeIntervalSince1970), .text(id)])
            return !rows.isEmpty
        }
    }

    // MARK: Encoding

    static func encode(_ audience: Audience) throws -> String {
        switch audience {
        case .all: return "all"
        case .tags(let expression): return "tags:" + expression.description
        case .handles(let platform, let channels):
            let data = try JSONEncoder().encode(channels)
            return "handles:\(platform.name):" + String(decoding: data, as: UTF8.self)
        }
    }

    static func decodeAudience(_ text: String) throws -> Audience {
        if text == "all" { return .all }
        if text.hasPrefix("tags:") {
            return .tags(try TagExpression(parsing: String(text.dropFirst(5)), limits: .init(maximumTagsOrOnly: .max, maximumTags: .max, maximumDepth: 1024)))
        }
        if text.hasPrefix("handles:") {
            let rest = text.dropFirst(8)
            guard let colon = rest.firstIndex(of: ":") else { throw HubError(.storageFailure, "a stored audience is corrupt") }
            let channels = try JSONDecoder().decode([PushChannel].self, from: Data(rest[rest.index(after: colon)...].utf8))
            return .handles(Platform(String(rest[..<colon])), channels)
        }
        throw HubError(.storageFailure, "a stored audience is corrupt")
    }

    static func encode(_ summary: DispatchSummary) throws -> String {
        var object: [String: [String: Int]] = [:]
        for (platform, outcomes) in summary.counts {
            object[platform.name] = Dictionary(uniqueKeysWithValues: outcomes.map { ($0.key.name, $0.value) })
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(object), as: UTF8.self)
    }

    static func decodeSummary(_ text: String) throws -> DispatchSummary {
        let object = try JSONDecoder().decode([String: [String: Int]].self, from: Data(text.utf8))
        var summary = DispatchSummary()
        for (platform, outcomes) in object {
            for (outcome, count) in outcomes { summary.record(Outcome(outcome), platform: Platform(platform), count: count) }
        }
        return summary
    }

    static func decode(_ row: SQLRow) throws -> NotificationRecord {
        guard let id = row.string("id"), let format = row.string("format"),
            let state = row.string("state")
        else { throw HubError(.storageFailure, "a stored notification row is incomplete") }
        let headers = try JSONDecoder().decode(NotificationHeaders.self, from: Data((row.string("headers") ?? "[]").utf8))
        let enqueue = Date(timeIntervalSince1970: row.double("enqueue_time") ?? 0)
        let notification = Notification(
            id: id, format: NotificationFormat(format), body: row.blob("body") ?? ByteBuffer(),
            headers: headers, audience: try decodeAudience(row.string("audience") ?? "all"), createdAt: enqueue)
        return NotificationRecord(
            notification: notification, state: NotificationState(state), enqueueTime: enqueue,
            scheduledTime: row.double("scheduled_time").map { Date(timeIntervalSince1970: $0) },
            startTime: row.double("start_time").map { Date(timeIntervalSince1970: $0) },
            endTime: row.double("end_time").map { Date(timeIntervalSince1970: $0) },
            summary: try decodeSummary(row.string("counts") ?? "{}"))
    }
}
