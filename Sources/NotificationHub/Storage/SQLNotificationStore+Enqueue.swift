import Foundation
import NIOCore

/// The queue's intake: an enqueue batch's rows, judged and leased at accept where it can be, stored with multi-row
/// or prepared statements.
extension SQLNotificationStore {
    /// Inserts a batch's rows (``rows(for:on:)``) inside a transaction: multi-row statements of up to 100
    /// notifications, and the partitions of those leased at once with one more. Every node learns of the
    /// notifications left for a claim when the transaction commits.
    static func insert(_ rows: EnqueueRows, on connection: any SQLExecutor, database: any HubDatabase) async throws -> [Enqueued] {
        try await insertRows(
            rows.notifications, perRow: EnqueueRows.notificationColumns, statement: insertNotifications(count:), on: connection)
        try await insertPartitions(rows.partitions, on: connection)
        if rows.results.contains(where: { $0.stored && $0.claimed == nil }) {
            try await database.notifyWork(from: "", on: connection)
        }
        return rows.results
    }

    /// What an enqueue batch writes: each caller's result, the values of the notification rows and of the partition
    /// rows of the sends leased at once.
    struct EnqueueRows {
        var results: [Enqueued] = []
        var notifications: [SQLValue] = []
        var partitions: [SQLValue] = []

        /// Values per notification row.
        static let notificationColumns = 10
    }

    /// The rows an enqueue batch inserts. A notification whose idempotency key is already stored (or used earlier in
    /// the batch) is not inserted and gets the first notification's id. Notifications with a claim that need no
    /// split are stored as `Processing`, with their partition.
    static func rows(for batch: [Enqueue], on connection: any SQLExecutor) async throws -> EnqueueRows {
        var rows = EnqueueRows()
        var keys: [String: String] = [:]
        // The batch's entries to insert, each with the place of its result.
        var inserted: [(entry: Enqueue, result: Int)] = []
        for entry in batch {
            if let key = entry.idempotencyKey {
                if let id = keys[key] {
                    rows.results.append(Enqueued(id: id, stored: false))
                    continue
                }
                let existing = try await connection.query(
                    "SELECT id FROM notifications WHERE idempotency_key = ?", [.text(key)])
                if let id = existing.first?.string("id") {
                    keys[key] = id
                    rows.results.append(Enqueued(id: id, stored: false))
                    continue
                }
                keys[key] = entry.notification.id
            }
            inserted.append((entry, rows.results.count))
            rows.results.append(Enqueued(id: entry.notification.id, stored: true))
        }
        // A claim takes a notification only when it stays one partition: with several partitions per node, an
        // audience too large for one page is left for the claims that split it. (The claims of one batch come from
        // one worker: they share its threshold, unless a reload came between them, which moves only the edge.)
        let splitting = inserted.indices.filter { inserted[$0].entry.claim.map { partitions($0, nodes: 1) > 1 } ?? false }
        var large = Set<Int>()
        if let first = splitting.first, let threshold = inserted[first].entry.claim?.splitAbove {
            let found = try await audiences(of: splitting.map { inserted[$0].entry.notification }, exceed: threshold, on: connection)
            for (row, isLarge) in zip(splitting, found) where isLarge { large.insert(row) }
        }
        rows.notifications.reserveCapacity(inserted.count * EnqueueRows.notificationColumns)
        for (index, (entry, result)) in inserted.enumerated() {
            let notification = entry.notification
            let claim = large.contains(index) ? nil : entry.claim
            let state: NotificationState = claim != nil ? .processing : entry.scheduledTime == nil ? .enqueued : .scheduled
            rows.notifications += [
                .text(notification.id), .text(notification.format.name), .blob(notification.body), .text(entry.headers),
                .text(entry.audience), .text(state.name), .float(notification.createdAt.timeIntervalSince1970),
                entry.scheduledTime.map { .float($0.timeIntervalSince1970) } ?? .null,
                entry.idempotencyKey.map { .text($0) } ?? .null,
                claim.map { .float($0.now.timeIntervalSince1970) } ?? .null,
            ]
            if let claim {
                rows.partitions += partitionRow(
                    notification.id, 0, (nil, nil), owner: claim.owner, lease: claim.now.timeIntervalSince1970 + claim.leaseSeconds)
                rows.results[result].claimed = leasedAtAccept(notification, claim)
            }
        }
        return rows
    }

    /// The work of a send stored as `Processing` with its one partition leased to `claim`'s owner.
    static func leasedAtAccept(_ notification: Notification, _ claim: ClaimRequest) -> DeliveryWork {
        let record = NotificationRecord(
            notification: notification, state: .processing, enqueueTime: notification.createdAt, startTime: claim.now)
        return DeliveryWork(record: record, partition: 0, lowerBound: nil, upperBound: nil, cursor: nil, claims: 1)
    }

    /// A multi-row insert of `count` notifications.
    static func insertNotifications(count: Int) -> String {
        """
        INSERT INTO notifications
            (id, format, body, headers, audience, state, enqueue_time, scheduled_time, idempotency_key, start_time)
        VALUES \(Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", count: count).joined(separator: ", "))
        """
    }

    /// Sends that are all to be leased at once, stored with one statement that commits by itself (PostgreSQL): it
    /// judges which audiences are large enough to split (``audiences(of:exceed:on:)``, the tag counts and the
    /// bounds computed by the statement), inserts every notification (`Processing` or, when large, `Enqueued` for
    /// the claims that split it) with a data-modifying `WITH`, and the partitions of the leased ones, so the whole
    /// batch commits together or not at all, in one round trip. When a large one was left for a claim, the other
    /// nodes are told after the commit.
    static func insertJudged(_ batch: [Enqueue], database: any HubDatabase) async throws -> [Enqueued] {
        let answer: [SQLRow]
        if batch.count == 1, let prepared = try await storeOneSend(batch[0], database: database) {
            answer = prepared
        } else if let prepared = try await storeSends(batch, database: database) {
            answer = prepared
        } else {
            answer = try await storeJudged(batch, database: database)
        }
        guard answer.count == batch.count else {
            throw HubError(.storageFailure, "storing \(batch.count) notifications answered \(answer.count) rows")
        }
        var leftForClaims = Set<Int>()
        for row in answer where row.int("large") == 1 {
            if let index = row.int("i") { leftForClaims.insert(index) }
        }
        let results = batch.enumerated().map { index, entry -> Enqueued in
            var result = Enqueued(id: entry.notification.id, stored: true)
            if !leftForClaims.contains(index), let claim = entry.claim {
                result.claimed = leasedAtAccept(entry.notification, claim)
            }
            return result
        }
        if !leftForClaims.isEmpty {
            // The sends are stored: a failed announcement must not answer their callers with an error (they would
            // send again). The other nodes' periodic claims find what nobody announced.
            try? await database.notifyWork(from: "", on: DatabaseReads(database: database))
        }
        return results
    }

    /// The values of one send's `input` row in ``insertJudged(_:database:)``, its audience's judgement aside.
    static func judgedValues(_ entry: Enqueue, _ claim: ClaimRequest) -> [SQLValue] {
        let notification = entry.notification
        return [
            .text(notification.id), .text(notification.format.name), .blob(notification.body), .text(entry.headers),
            .text(entry.audience), .float(notification.createdAt.timeIntervalSince1970),
            .float(claim.now.timeIntervalSince1970), .text(claim.owner),
            .float(claim.now.timeIntervalSince1970 + claim.leaseSeconds),
        ]
    }

    /// A batch's store (``insertJudged(_:database:)``) as one statement built for it: each audience's bound is an
    /// expression over the counts of its tags, or its own counting query.
    static func storeJudged(_ batch: [Enqueue], database: any HubDatabase) async throws -> [SQLRow] {
        var tags: [String: Int] = [:]
        var rows: [String] = []
        var binds: [SQLValue] = []
        var limit = 1
        for (index, entry) in batch.enumerated() {
            guard let claim = entry.claim else { preconditionFailure("every send of a judged batch has a claim") }
            binds += judgedValues(entry, claim)
            // A claim takes a notification only when it stays one partition (see `rows(for:on:)`).
            var large = "FALSE"
            if partitions(claim, nodes: 1) > 1 {
                let threshold = claim.splitAbove
                switch AudienceSize(entry.notification, threshold: threshold) {
                case .small: break
                case .large: large = "TRUE"
                case .bounded(let expression, _):
                    limit = max(limit, threshold + 1)
                    large = upperBoundSQL(expression, tags: &tags).map { "\($0) > \(threshold)" } ?? "TRUE"
                case .counted(let plan):
                    large = "(SELECT COUNT(*) FROM (\(plan.sql)) AS p) > \(threshold)"
                    binds += plan.binds
                }
            }
            rows.append("(\(index), ?, ?, ?, ?, ?, ?, ?, ?, ?, \(large))")
        }
        var with: [String] = []
        let numbered = tags.sorted { $0.value < $1.value }
        if !numbered.isEmpty {
            with.append(
                "wanted(k, tag) AS (VALUES \(numbered.map { "(\($0.value), ?)" }.joined(separator: ", ")))")
            with.append(
                """
                counts(k, n) AS (SELECT wanted.k, \(cappedCount(tag: "wanted.tag", limit: "\(limit)")) FROM wanted)
                """)
        }
        with.append(
            judgedStore(
                input: """
                    input(i, id, format, body, headers, audience, enqueue_time, start_time, owner, lease, large) AS (
                        VALUES \(rows.joined(separator: ", ")))
                    """))
        return try await database.write("WITH " + with.joined(separator: ",\n"), numbered.map { .text($0.key) } + binds)
    }

    /// One send's store as a prepared statement (``PreparedStatement/storeOneSend``) when its audience needs no
    /// judging or is judged by one tag's count (one user's send): `nil` otherwise, or where the database keeps no
    /// prepared statements.
    static func storeOneSend(_ entry: Enqueue, database: any HubDatabase) async throws -> [SQLRow]? {
        guard let claim = entry.claim else { return nil }
        var judge: (tag: SQLValue, limit: Int, threshold: Int) = (.null, 0, 0)
        if partitions(claim, nodes: 1) > 1 {
            switch AudienceSize(entry.notification, threshold: claim.splitAbove) {
            case .small: break
            case .bounded(.tag(let tag), _): judge = (.text(tag), claim.splitAbove + 1, claim.splitAbove)
            case .bounded, .large, .counted: return nil
            }
        }
        return try await database.write(
            prepared: .storeOneSend,
            judgedValues(entry, claim) + [judge.tag, .integer(judge.limit), .integer(judge.threshold)])
    }

    /// A batch's store as a prepared statement (``PreparedStatement/storeSends``) when each send's audience needs no
    /// judging or is judged by one tag's count (per-user sends): `nil` otherwise, or where the database keeps no
    /// prepared statements.
    static func storeSends(_ batch: [Enqueue], database: any HubDatabase) async throws -> [SQLRow]? {
        var rows: [SentRow] = []
        rows.reserveCapacity(batch.count)
        for (index, entry) in batch.enumerated() {
            guard let claim = entry.claim else { return nil }
            let notification = entry.notification
            var row = SentRow(
                i: index, id: notification.id, format: notification.format.name,
                body: Data(notification.body.readableBytesView).base64EncodedString(), headers: entry.headers,
                audience: entry.audience, enqueued: notification.createdAt.timeIntervalSince1970,
                started: claim.now.timeIntervalSince1970, owner: claim.owner,
                lease: claim.now.timeIntervalSince1970 + claim.leaseSeconds)
            if partitions(claim, nodes: 1) > 1 {
                switch AudienceSize(notification, threshold: claim.splitAbove) {
                case .small: break
                case .bounded(.tag(let tag), _):
                    row.tag = tag
                    row.lim = claim.splitAbove + 1
                    row.threshold = claim.splitAbove
                case .bounded, .large, .counted: return nil
                }
            }
            rows.append(row)
        }
        return try await database.write(prepared: .storeSends, [.text(try json(rows))])
    }

    /// One row of ``storeSendsStatement``'s JSON parameter: ``judgedValues(_:_:)`` with the body in base64 (times in
    /// seconds since 1970: `enqueued`, `started` and the `lease`'s end), and the
    /// tag that judges the audience (counted up to `lim` rows, large above `threshold`; none when `nil`).
    struct SentRow: Encodable {
        var i: Int
        var id: String
        var format: String
        var body: String
        var headers: String
        var audience: String
        var enqueued: Double
        var started: Double
        var owner: String
        var lease: Double
        var tag: String?
        var lim = 0
        var threshold = 0
    }

    /// ``storeJudged(_:database:)`` for sends each judged by at most one tag, read from a JSON array of ``SentRow``s.
    static let storeSendsStatement = "WITH " + judgedStore(
        input: """
            input AS (SELECT r.i, r.id, r.format, decode(r.body, 'base64') AS body, r.headers, r.audience,
                r.enqueued AS enqueue_time, r.started AS start_time, r.owner, r.lease,
                r.tag IS NOT NULL AND \(cappedCount(tag: "r.tag", limit: "r.lim")) > r.threshold AS large
                FROM json_to_recordset($1::json) AS r(i int8, id text, format text, body text, headers text,
                    audience text, enqueued float8, started float8, owner text, lease float8, tag text,
                    lim int8, threshold int8))
            """)

    /// ``storeJudged(_:database:)`` for one send whose audience is judged by at most one tag (`$10`, counted up to
    /// `$11` rows, large above `$12`; none when `NULL`), with ``judgedValues(_:_:)`` as `$1`…`$9`.
    static let storeOneSendStatement = "WITH " + judgedStore(
        input: """
            input AS (SELECT 0 AS i, $1::text AS id, $2::text AS format, $3::bytea AS body, $4::text AS headers,
                $5::text AS audience, $6::float8 AS enqueue_time, $7::float8 AS start_time, $8::text AS owner,
                $9::float8 AS lease, $10::text IS NOT NULL AND \(cappedCount(tag: "$10", limit: "$11")) > $12 AS large)
            """)

    /// The part of a judged store after its other `WITH` queries: its `input` (`i`, the row's place in the batch,
    /// the ``judgedValues(_:_:)`` columns and `large`), every row stored as `Processing` or, when large, `Enqueued`,
    /// the partitions of those not large, and each row's place and judgement as the answer.
    static func judgedStore(input: String) -> String {
        """
        \(input),
        stored AS (
            INSERT INTO notifications (id, format, body, headers, audience, state, enqueue_time, start_time)
            SELECT id, format, body, headers, audience,
                CASE WHEN large THEN '\(NotificationState.enqueued.name)' ELSE '\(NotificationState.processing.name)' END,
                enqueue_time, CASE WHEN large THEN NULL ELSE start_time END
            FROM input RETURNING id),
        leased AS (
            INSERT INTO notification_partitions (notification_id, partition, state, lease_owner, lease_expires, claims)
            SELECT id, 0, 'Processing', owner, lease, 1 FROM input WHERE NOT large RETURNING notification_id)
        SELECT i, large FROM input
        """
    }
}
