import Foundation
import NIOCore

/// The embedded notification store, in the same database file as the installations.
public final class SQLNotificationStore: NotificationStore {
    /// The database the store writes to.
    public let database: any HubDatabase

    /// Concurrent enqueues share one transaction.
    private let enqueues: WriteCombiner<Enqueue, String>

    /// Creates a store on a database opened with ``SQLiteHubDatabase/hubSchema``.
    public init(database: any HubDatabase) {
        self.database = database
        enqueues = WriteCombiner { batch in
            try await database.transaction { connection in try await Self.insert(batch, on: connection) }
        }
    }

    /// One accepted notification to persist.
    struct Enqueue: Sendable {
        var notification: Notification
        var headers: String
        var audience: String
        var scheduledTime: Date?
        var idempotencyKey: String?
    }

    static let columns =
        "id, format, body, headers, audience, state, enqueue_time, scheduled_time, start_time, end_time, counts, reason"

    public func enqueue(_ notification: Notification, scheduledTime: Date?, idempotencyKey: String?) async throws -> String {
        let headers = String(decoding: try JSONEncoder().encode(notification.headers), as: UTF8.self)
        let audience = try Self.encode(notification.audience)
        return try await enqueues.submit(
            Enqueue(
                notification: notification, headers: headers, audience: audience, scheduledTime: scheduledTime,
                idempotencyKey: idempotencyKey))
    }

    /// Inserts notifications with one multi-row statement; a notification whose idempotency key is already stored
    /// (or used earlier in the batch) is not inserted and gets the first notification's id.
    static func insert(_ batch: [Enqueue], on connection: any SQLExecutor) async throws -> [String] {
        var ids: [String] = []
        var keys: [String: String] = [:]
        var rows: [Enqueue] = []
        for entry in batch {
            if let key = entry.idempotencyKey {
                if let id = keys[key] {
                    ids.append(id)
                    continue
                }
                let existing = try await connection.query(
                    "SELECT id FROM notifications WHERE idempotency_key = ?", [.text(key)])
                if let id = existing.first?.string("id") {
                    keys[key] = id
                    ids.append(id)
                    continue
                }
                keys[key] = entry.notification.id
            }
            ids.append(entry.notification.id)
            rows.append(entry)
        }
        for start in stride(from: 0, to: rows.count, by: 100) {
            let chunk = rows[start..<min(start + 100, rows.count)]
            var binds: [SQLValue] = []
            binds.reserveCapacity(chunk.count * 9)
            for entry in chunk {
                let notification = entry.notification
                binds += [
                    .text(notification.id), .text(notification.format.name), .blob(notification.body), .text(entry.headers),
                    .text(entry.audience),
                    .text(entry.scheduledTime == nil ? NotificationState.enqueued.name : NotificationState.scheduled.name),
                    .float(notification.createdAt.timeIntervalSince1970),
                    entry.scheduledTime.map { .float($0.timeIntervalSince1970) } ?? .null,
                    entry.idempotencyKey.map { .text($0) } ?? .null,
                ]
            }
            let values = Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?)", count: chunk.count).joined(separator: ", ")
            _ = try await connection.query(
                """
                INSERT INTO notifications (id, format, body, headers, audience, state, enqueue_time, scheduled_time, idempotency_key)
                VALUES \(values)
                """, binds)
        }
        return ids
    }

    /// On PostgreSQL, rows another transaction holds are skipped (claims) or waited for (counts).
    var skipLocked: String { database.dialect == .postgres ? " FOR UPDATE SKIP LOCKED" : "" }
    var forUpdate: String { database.dialect == .postgres ? " FOR UPDATE" : "" }

    public func claim(owner: String, leaseSeconds: Double, now: Date, partitions: Int) async throws -> Claim? {
        let time = now.timeIntervalSince1970
        let lease = time + leaseSeconds
        return try await database.transaction { connection in
            // A partition nobody holds: not started yet, or left by a worker whose lease expired.
            let open = try await connection.query(
                """
                UPDATE notification_partitions SET state = 'Processing', lease_owner = ?, lease_expires = ?,
                    claims = claims + 1
                WHERE (notification_id, partition) IN (
                    SELECT notification_id, partition FROM notification_partitions
                    WHERE state = 'Pending' OR (state = 'Processing' AND lease_expires < ?)
                    ORDER BY notification_id, partition LIMIT 1\(skipLocked))
                RETURNING notification_id, partition, lower_bound, upper_bound, cursor, claims
                """,
                [.text(owner), .float(lease), .float(time)])
            if let row = open.first, let id = row.string("notification_id") {
                let records = try await connection.query(
                    "SELECT \(Self.columns) FROM notifications WHERE id = ?", [.text(id)])
                let record: NotificationRecord
                do {
                    guard let first = records.first else { throw HubError(.storageFailure, "the notification row is missing") }
                    record = try Self.decode(first)
                } catch {
                    return try await Self.end(id: id, reason: Self.unreadable(error), time: time, on: connection)
                }
                return .work(
                    DeliveryWork(
                        record: record, partition: row.int("partition") ?? 0,
                        lowerBound: row.int64("lower_bound").map(InstallationCursor.init(position:)),
                        upperBound: row.int64("upper_bound").map(InstallationCursor.init(position:)),
                        cursor: row.int64("cursor").map(InstallationCursor.init(position:)),
                        claims: row.int("claims") ?? 1))
            }
            // Otherwise the next due notification, split into partitions: a scheduled one whose time has come, else
            // the oldest enqueued one. Each is the first row of an index range, so a backlog costs nothing here.
            var due: [SQLRow] = []
            for (condition, order, binds) in [
                ("state = 'Scheduled' AND scheduled_time <= ?", "scheduled_time", [SQLValue.float(time)]),
                ("state = 'Enqueued'", "enqueue_time", []),
            ] where due.isEmpty {
                due = try await connection.query(
                    """
                    UPDATE notifications SET state = 'Processing', start_time = COALESCE(start_time, ?)
                    WHERE id = (
                        SELECT id FROM notifications WHERE \(condition)
                        ORDER BY state, \(order) LIMIT 1\(skipLocked))
                    RETURNING \(Self.columns)
                    """,
                    [.float(time)] + binds)
            }
            guard let row = due.first else { return nil }
            let record: NotificationRecord
            do {
                record = try Self.decode(row)
            } catch {
                guard let id = row.string("id") else { throw error }
                return try await Self.end(id: id, reason: Self.unreadable(error), time: time, on: connection)
            }
            var bounds: [(lower: Int64?, upper: Int64?)] = [(nil, nil)]
            if partitions > 1, case .handles = record.notification.audience {
                // A direct send has no audience to split.
            } else if partitions > 1 {
                let range = try await connection.query("SELECT MIN(rid) AS low, MAX(rid) AS high FROM installations", [])
                if let low = range.first?.int64("low"), let high = range.first?.int64("high"), high - low + 1 >= Int64(partitions) {
                    let start = low - 1
                    let span = high - start
                    bounds = (0..<Int64(partitions)).map { index in
                        let lower = index == 0 ? nil : start + span * index / Int64(partitions)
                        let upper = index == Int64(partitions) - 1 ? nil : start + span * (index + 1) / Int64(partitions)
                        return (lower, upper)
                    }
                }
            }
            for (index, bound) in bounds.enumerated() {
                _ = try await connection.query(
                    """
                    INSERT INTO notification_partitions
                        (notification_id, partition, lower_bound, upper_bound, state, lease_owner, lease_expires, claims)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                    [
                        .text(record.notification.id), .integer(index),
                        bound.lower.map { .integer(Int($0)) } ?? .null, bound.upper.map { .integer(Int($0)) } ?? .null,
                        .text(index == 0 ? "Processing" : "Pending"), index == 0 ? .text(owner) : .null,
                        index == 0 ? .float(lease) : .null, .integer(index == 0 ? 1 : 0),
                    ])
            }
            return .work(
                DeliveryWork(
                    record: record, partition: 0, lowerBound: bounds[0].lower.map(InstallationCursor.init(position:)),
                    upperBound: bounds[0].upper.map(InstallationCursor.init(position:)), cursor: nil, claims: 1))
        }
    }

    /// The reason recorded for a row that cannot be read (never its content).
    static func unreadable(_ error: any Error) -> String {
        let detail = (error as? HubError)?.message ?? "\(type(of: error))"
        return "the stored notification cannot be read (\(detail)); it was not delivered"
    }

    /// Ends a notification inside a transaction: `Abandoned` with a reason, every partition done.
    static func end(id: String, reason: String, time: Double, on connection: any SQLExecutor) async throws -> Claim {
        _ = try await connection.query(
            """
            UPDATE notifications SET state = 'Abandoned', reason = ?, end_time = ?, start_time = COALESCE(start_time, ?)
            WHERE id = ?
            """,
            [.text(reason), .float(time), .float(time), .text(id)])
        _ = try await connection.query(
            """
            UPDATE notification_partitions SET state = 'Done', lease_owner = NULL, lease_expires = NULL
            WHERE notification_id = ?
            """,
            [.text(id)])
        return .ended(id: id, reason: reason)
    }

    public func end(id: String, reason: String, now: Date) async throws {
        try await database.transaction { connection in
            _ = try await Self.end(id: id, reason: reason, time: now.timeIntervalSince1970, on: connection)
        }
    }

    public func releaseLease(id: String, partition: Int, owner: String, now: Date) async throws {
        try await database.transaction { connection in
            _ = try await connection.query(
                """
                UPDATE notification_partitions SET lease_expires = ?, claims = CASE WHEN claims > 0 THEN claims - 1 ELSE 0 END
                WHERE notification_id = ? AND partition = ? AND lease_owner = ? AND state = 'Processing'
                """,
                [.float(now.timeIntervalSince1970 - 1), .text(id), .integer(partition), .text(owner)])
        }
    }

    public func renewLease(id: String, partition: Int, owner: String, leaseSeconds: Double, now: Date) async throws -> Bool {
        try await database.transaction { connection in
            let rows = try await connection.query(
                """
                UPDATE notification_partitions SET lease_expires = ?
                WHERE notification_id = ? AND partition = ? AND lease_owner = ? AND state = 'Processing'
                RETURNING partition
                """,
                [.float(now.timeIntervalSince1970 + leaseSeconds), .text(id), .integer(partition), .text(owner)])
            return !rows.isEmpty
        }
    }

    public func recordCheckpoint(id: String, partition: Int, owner: String, _ checkpoint: DispatchCheckpoint) async throws -> Bool {
        try await database.transaction { connection in
            let held = try await connection.query(
                """
                UPDATE notification_partitions SET cursor = COALESCE(?, cursor)
                WHERE notification_id = ? AND partition = ? AND lease_owner = ? AND state = 'Processing'
                RETURNING partition
                """,
                [checkpoint.cursor.map { .integer(Int($0.position)) } ?? .null, .text(id), .integer(partition), .text(owner)])
            guard !held.isEmpty else { return false }
            let rows = try await connection.query("SELECT counts FROM notifications WHERE id = ?\(forUpdate)", [.text(id)])
            guard let row = rows.first else { return false }
            var summary = try Self.decodeSummary(row.string("counts") ?? "{}")
            summary.merge(checkpoint.summary)
            _ = try await connection.query(
                "UPDATE notifications SET counts = ? WHERE id = ?", [.text(try Self.encode(summary)), .text(id)])
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
            // Expired channels are applied in the same transaction as the counts that include them.
            for mark in checkpoint.expiredChannels { _ = try await SQLInstallationStore.apply(mark, on: connection) }
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

    public func finishPartition(id: String, partition: Int, owner: String, now: Date) async throws -> NotificationState? {
        try await database.transaction { connection in
            let done = try await connection.query(
                """
                UPDATE notification_partitions SET state = 'Done', lease_owner = NULL, lease_expires = NULL
                WHERE notification_id = ? AND partition = ? AND lease_owner = ? AND state = 'Processing'
                RETURNING partition
                """,
                [.text(id), .integer(partition), .text(owner)])
            guard !done.isEmpty else { return nil }
            // Serialise the last partitions' finishes so exactly one of them finishes the notification.
            let rows = try await connection.query("SELECT counts FROM notifications WHERE id = ?\(forUpdate)", [.text(id)])
            guard let row = rows.first else { return nil }
            let remaining = try await connection.query(
                "SELECT COUNT(*) AS n FROM notification_partitions WHERE notification_id = ? AND state <> 'Done'", [.text(id)])
            guard remaining.first?.int("n") == 0 else { return nil }
            let summary = try Self.decodeSummary(row.string("counts") ?? "{}")
            let state: NotificationState =
                summary.total == 0 ? .noTargetFound : summary.count(of: .abandoned) == summary.total ? .abandoned : .completed
            _ = try await connection.query(
                "UPDATE notifications SET state = ?, end_time = ? WHERE id = ? AND state = 'Processing'",
                [.text(state.name), .float(now.timeIntervalSince1970), .text(id)])
            return state
        }
    }

    public func record(id: String) async throws -> NotificationRecord? {
        let rows = try await database.read("SELECT \(Self.columns) FROM notifications WHERE id = ?", [.text(id)])
        return try rows.first.map { try Self.decode($0, lenient: true) }
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
        case .unreadable(let text):
            return text
        }
    }

    static func readAudience(_ text: String, lenient: Bool) throws -> Audience {
        do {
            return try decodeAudience(text)
        } catch {
            if lenient { return .unreadable(text) }
            throw error
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

    /// Reads a notification row. Strict (for delivery) throws on an audience that cannot be parsed; lenient (for
    /// telemetry) reads it as ``Audience/unreadable(_:)``.
    static func decode(_ row: SQLRow) throws -> NotificationRecord {
        try decode(row, lenient: false)
    }

    static func decode(_ row: SQLRow, lenient: Bool) throws -> NotificationRecord {
        guard let id = row.string("id"), let format = row.string("format"),
            let state = row.string("state")
        else { throw HubError(.storageFailure, "a stored notification row is incomplete") }
        // A missing audience is an unreadable row, never a broadcast.
        guard let audience = row.string("audience") else { throw HubError(.storageFailure, "the stored audience is missing") }
        let headers = try JSONDecoder().decode(NotificationHeaders.self, from: Data((row.string("headers") ?? "[]").utf8))
        let enqueue = Date(timeIntervalSince1970: row.double("enqueue_time") ?? 0)
        let notification = Notification(
            id: id, format: NotificationFormat(format), body: row.blob("body") ?? ByteBuffer(),
            headers: headers, audience: try readAudience(audience, lenient: lenient), createdAt: enqueue)
        return NotificationRecord(
            notification: notification, state: NotificationState(state), enqueueTime: enqueue,
            scheduledTime: row.double("scheduled_time").map { Date(timeIntervalSince1970: $0) },
            startTime: row.double("start_time").map { Date(timeIntervalSince1970: $0) },
            endTime: row.double("end_time").map { Date(timeIntervalSince1970: $0) },
            summary: try decodeSummary(row.string("counts") ?? "{}"), reason: row.string("reason"))
    }
}
