import Foundation

/// A hub's outbox of webhook events in its store: written by the store's own triggers in the transaction that causes
/// an event (a notification ending, a device failing), leased by a sender, marked delivered or retried later.
///
/// An event is written once per subscription that wants its kind (``subscribe(_:)``), so each receiver has its own
/// delivery state; the sender posts it at least once.
public struct EventOutbox: Sendable {
    let database: any HubDatabase

    /// Creates the outbox of a hub's database.
    public init(database: any HubDatabase) {
        self.database = database
    }

    /// Replaces the stored subscriptions (what the triggers write events for) with `events`; an empty list stops
    /// new events. Entries already in the outbox stay.
    public func subscribe(_ events: [(subscription: String, event: WebhookEventKind)]) async throws {
        try await database.transaction { connection in
            _ = try await connection.query("DELETE FROM webhook_subscriptions", [])
            for entry in events {
                _ = try await connection.query(
                    "INSERT INTO webhook_subscriptions (subscription, event) VALUES (?, ?)",
                    [.text(entry.subscription), .text(entry.event.name)])
            }
        }
    }

    /// Writes an event for every subscription that wants `kind`, inside a transaction of the change that causes it.
    /// `data` is the event's JSON object.
    public static func append(
        _ kind: WebhookEventKind, data: String, time: Date, on connection: any SQLExecutor
    ) async throws {
        _ = try await connection.query(
            """
            INSERT INTO webhook_outbox (subscription, event, created_time, data)
            SELECT subscription, event, ?, ? FROM webhook_subscriptions WHERE event = ?
            """,
            [.float(time.timeIntervalSince1970), .text(data), .text(kind.name)])
    }

    /// Leases up to `limit` due events of `subscriptions` (pending, next attempt reached, not leased by a live
    /// sender) to `owner` for `leaseSeconds`, oldest first.
    public func claim(
        subscriptions: [String], owner: String, now: Date, leaseSeconds: Double, limit: Int
    ) async throws -> [OutboxEvent] {
        guard !subscriptions.isEmpty else { return [] }
        let time = now.timeIntervalSince1970
        let names = Array(repeating: "?", count: subscriptions.count).joined(separator: ", ")
        let lock = database.dialect.lockForUpdateSkippingLocked
        let rows = try await database.transaction { connection in
            try await connection.query(
                """
                UPDATE webhook_outbox SET lease_owner = ?, lease_expires = ?
                WHERE id IN (
                    SELECT id FROM webhook_outbox
                    WHERE state = 'pending' AND next_attempt <= ? AND subscription IN (\(names))
                        AND (lease_expires IS NULL OR lease_expires < ?)
                    ORDER BY id LIMIT \(max(1, limit))\(lock))
                RETURNING \(Self.columns)
                """,
                [.text(owner), .float(time + leaseSeconds), .float(time)] + subscriptions.map { .text($0) }
                    + [.float(time)])
        }
        return rows.compactMap(Self.decode).sorted { $0.id < $1.id }
    }

    /// Records a delivery the receiver accepted.
    public func markDelivered(id: Int64, owner: String, status: Int, now: Date) async throws {
        _ = try await database.write(
            """
            UPDATE webhook_outbox SET state = 'delivered', delivered_time = ?, attempts = attempts + 1, last_status = ?,
                last_error = NULL, lease_owner = NULL, lease_expires = NULL
            WHERE id = ? AND lease_owner = ?
            """,
            [.float(now.timeIntervalSince1970), .integer(status), .integer(Int(id)), .text(owner)])
    }

    /// Records a failed attempt: the event is tried again at `nextAttempt`, or given up (state `failed`) when
    /// `nextAttempt` is `nil`. `status` is the receiver's answer, if it answered.
    public func markFailed(
        id: Int64, owner: String, status: Int?, error: String, nextAttempt: Date?
    ) async throws {
        _ = try await database.write(
            """
            UPDATE webhook_outbox SET state = ?, attempts = attempts + 1, next_attempt = ?, last_status = ?,
                last_error = ?, lease_owner = NULL, lease_expires = NULL
            WHERE id = ? AND lease_owner = ?
            """,
            [
                .text(nextAttempt == nil ? OutboxEvent.State.failed.rawValue : OutboxEvent.State.pending.rawValue),
                .float(nextAttempt?.timeIntervalSince1970 ?? 0), status.map { .integer($0) } ?? .null,
                .text(String(error.prefix(500))), .integer(Int(id)), .text(owner),
            ])
    }

    /// Makes an event due again at once with a fresh count of attempts, whatever its state; returns it, or `nil` when
    /// there is no such event.
    public func replay(id: Int64, now: Date) async throws -> OutboxEvent? {
        let rows = try await database.write(
            """
            UPDATE webhook_outbox SET state = 'pending', attempts = 0, next_attempt = ?, lease_owner = NULL,
                lease_expires = NULL
            WHERE id = ? RETURNING \(Self.columns)
            """,
            [.float(now.timeIntervalSince1970), .integer(Int(id))])
        return rows.first.flatMap(Self.decode)
    }

    /// Deletes events delivered before `time`, at most `limit`; returns how many.
    @discardableResult
    public func purgeDelivered(before time: Date, limit: Int = 10_000) async throws -> Int {
        let rows = try await database.write(
            """
            DELETE FROM webhook_outbox WHERE id IN (
                SELECT id FROM webhook_outbox WHERE state = 'delivered' AND delivered_time < ? ORDER BY id LIMIT \(max(1, limit)))
            RETURNING id
            """,
            [.float(time.timeIntervalSince1970)])
        return rows.count
    }

    /// One event.
    public func event(id: Int64) async throws -> OutboxEvent? {
        let rows = try await database.read("SELECT \(Self.columns) FROM webhook_outbox WHERE id = ?", [.integer(Int(id))])
        return rows.first.flatMap(Self.decode)
    }

    /// Events newest first, before id `before` (exclusive) when given, in `state` when given, at most `limit`.
    public func list(state: OutboxEvent.State?, before: Int64?, limit: Int) async throws -> [OutboxEvent] {
        var conditions: [String] = []
        var binds: [SQLValue] = []
        if let state {
            conditions.append("state = ?")
            binds.append(.text(state.rawValue))
        }
        if let before {
            conditions.append("id < ?")
            binds.append(.integer(Int(before)))
        }
        let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        let rows = try await database.read(
            "SELECT \(Self.columns) FROM webhook_outbox\(filter) ORDER BY id DESC LIMIT \(max(1, limit))", binds)
        return rows.compactMap(Self.decode)
    }

    static let columns =
        "id, subscription, event, created_time, data, state, attempts, next_attempt, delivered_time, last_status, last_error"

    static func decode(_ row: SQLRow) -> OutboxEvent? {
        guard let id = row.int64("id"), let subscription = row.string("subscription"), let event = row.string("event"),
            let created = row.double("created_time"), let data = row.string("data"),
            let state = row.string("state").flatMap(OutboxEvent.State.init(rawValue:))
        else { return nil }
        return OutboxEvent(
            id: id, subscription: subscription, event: event, createdTime: Date(timeIntervalSince1970: created),
            data: data, state: state, attempts: row.int("attempts") ?? 0,
            nextAttempt: row.double("next_attempt").map { Date(timeIntervalSince1970: $0) },
            deliveredTime: row.double("delivered_time").map { Date(timeIntervalSince1970: $0) },
            lastStatus: row.int("last_status"), lastError: row.string("last_error"))
    }
}

/// One event in a hub's outbox, for one subscription.
public struct OutboxEvent: Sendable, Hashable {
    /// Where an event stands.
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// Waiting for its (next) attempt.
        case pending
        /// Accepted by the receiver (a 2xx answer).
        case delivered
        /// Given up after the configured attempts; replayable.
        case failed
    }

    /// The event's id, unique in the hub, the same in every attempt and replay.
    public var id: Int64
    /// The subscription it is posted to.
    public var subscription: String
    /// Its kind's name (``WebhookEventKind/name``).
    public var event: String
    /// When it happened.
    public var createdTime: Date
    /// Its data: a JSON object.
    public var data: String
    /// Its state.
    public var state: State
    /// Attempts made.
    public var attempts: Int
    /// When it is tried next (pending events).
    public var nextAttempt: Date?
    /// When the receiver accepted it.
    public var deliveredTime: Date?
    /// The receiver's last answer, if it answered.
    public var lastStatus: Int?
    /// Why the last attempt failed.
    public var lastError: String?
}
