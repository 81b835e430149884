import Foundation
import NIOCore

/// The embedded notification store, in the same database file as the installations.
public final class SQLNotificationStore: NotificationStore {
    /// The database the store writes to.
    public let database: any HubDatabase

    /// Concurrent enqueues share one transaction.
    private let enqueues: WriteCombiner<Enqueue, Enqueued>
    /// Concurrent completions share one transaction per lane. PostgreSQL runs several lanes at once (each statement
    /// is a round trip, so one lane bounds small sends at one completion per few round trips); a notification's
    /// partitions always take the same lane, so two lanes never wait for one notification's row.
    private let completions: [WriteCombiner<Completion, NotificationState?>]

    /// Creates a store on a database opened with ``SQLiteHubDatabase/hubSchema``.
    public init(database: any HubDatabase) {
        self.database = database
        enqueues = WriteCombiner { batch in
            // On PostgreSQL, sends all to be leased at once are judged and stored with one statement; another batch
            // without idempotency keys is planned before any transaction (planning then only reads) and stored in one.
            if database.dialect.statementsAreRoundTrips, batch.allSatisfy({ $0.idempotencyKey == nil }) {
                if batch.count <= 100, batch.allSatisfy({ $0.claim != nil }) {
                    return try await Self.insertJudged(batch, database: database)
                }
                let rows = try await Self.rows(for: batch, on: DatabaseReads(database: database))
                return try await database.transaction { try await Self.insert(rows, on: $0, database: database) }
            }
            return try await database.transaction { connection in
                try await Self.insert(try await Self.rows(for: batch, on: connection), on: connection, database: database)
            }
        }
        let forUpdate = database.dialect.lockForUpdate
        let lanes = database.dialect.concurrentWriters
        completions = (0..<lanes).map { _ in
            WriteCombiner { batch in
                if let finished = try await Self.finishAlone(batch, database: database) { return finished }
                return try await database.transaction { connection in
                    try await Self.complete(batch, forUpdate: forUpdate, on: connection)
                }
            }
        }
    }

    /// A partition's last checkpoint and its finish.
    struct Completion: Sendable {
        var id: String
        var partition: Int
        var owner: String
        var checkpoint: DispatchCheckpoint
        var time: Date
        /// The notification's only partition, with nothing recorded of it before.
        var alone = false
    }

    public func complete(
        id: String, partition: Int, owner: String, _ checkpoint: DispatchCheckpoint, now: Date, alone: Bool
    ) async throws -> NotificationState? {
        let lane = completions[Int(UInt(bitPattern: Self.stableHash(id)) % UInt(completions.count))]
        return try await lane.submit(
            Completion(id: id, partition: partition, owner: owner, checkpoint: checkpoint, time: now, alone: alone))
    }

    /// Finishes notifications that each had one partition and nothing recorded before, with one statement that
    /// commits by itself (PostgreSQL): a data-modifying `WITH` marks the partitions still held done, and the
    /// statement writes the counts and final state of their notifications (over `Processing` only, as
    /// ``complete(_:forUpdate:on:)`` does). With nothing stored to merge and no other partition to wait for,
    /// nothing needs reading first. `nil` when the batch needs a transaction: an item that is not alone, failures or
    /// expired channels to record, or too many items for one statement.
    static func finishAlone(_ batch: [Completion], database: any HubDatabase) async throws -> [NotificationState?]? {
        guard database.dialect.statementsAreRoundTrips, batch.count <= 100,
            batch.allSatisfy({ $0.alone && $0.checkpoint.failures.isEmpty && $0.checkpoint.expiredChannels.isEmpty }),
            Set(batch.map(\.id)).count == batch.count
        else { return nil }
        var binds: [SQLValue] = []
        binds.reserveCapacity(batch.count * 6)
        for item in batch {
            let summary = item.checkpoint.summary
            binds += [
                .text(item.id), .integer(item.partition), .text(item.owner), .text(try Self.encode(summary)),
                .text(Self.finalState(of: summary).name), .float(item.time.timeIntervalSince1970),
            ]
        }
        let rows: [SQLRow]
        if batch.count == 1, let single = try await database.write(prepared: .finishOneAlone, binds) {
            rows = single
        } else if let prepared = try await database.write(
            prepared: .finishAlone, [.text(try Self.json(batch.map(FinishedAlone.init)))])
        {
            rows = prepared
        } else {
            rows = try await database.write(
                """
                WITH v(nid, npartition, nowner, ncounts, nstate, ntime) AS (
                    VALUES \(Array(repeating: "(?, ?, ?, ?, ?, ?)", count: batch.count).joined(separator: ", "))),
                done AS (
                    UPDATE notification_partitions p SET state = 'Done', lease_owner = NULL, lease_expires = NULL
                    FROM v WHERE p.state = 'Processing' AND p.notification_id = v.nid AND p.partition = v.npartition
                        AND p.lease_owner = v.nowner
                    RETURNING p.notification_id)
                UPDATE notifications SET counts = v.ncounts,
                    state = CASE WHEN state = 'Processing' THEN v.nstate ELSE state END,
                    end_time = CASE WHEN state = 'Processing' THEN v.ntime ELSE end_time END
                FROM v JOIN done ON done.notification_id = v.nid
                WHERE notifications.id = v.nid
                RETURNING notifications.id, notifications.state
                """,
                binds)
        }
        var stored: [String: String] = [:]
        for row in rows { if let id = row.string("id") { stored[id] = row.string("state") } }
        // An item whose lease was lost records nothing (`nil`); one that finished reports the stored state (one
        // that ended otherwise meanwhile reports that).
        return batch.map { item in stored[item.id].map(NotificationState.init) }
    }

    /// ``finishAlone(_:database:)`` for one partition, as a prepared statement (``PreparedStatement/finishOneAlone``):
    /// id, partition, owner, counts, final state, time.
    static let finishOneAloneStatement = """
        WITH done AS (
            UPDATE notification_partitions SET state = 'Done', lease_owner = NULL, lease_expires = NULL
            WHERE state = 'Processing' AND notification_id = $1 AND partition = $2 AND lease_owner = $3
            RETURNING notification_id)
        UPDATE notifications SET counts = $4,
            state = CASE WHEN state = 'Processing' THEN $5 ELSE state END,
            end_time = CASE WHEN state = 'Processing' THEN $6 ELSE end_time END
        FROM done WHERE notifications.id = done.notification_id
        RETURNING notifications.id, notifications.state
        """

    /// ``finishAlone(_:database:)`` for a batch, as a prepared statement (``PreparedStatement/finishAlone``) whose one
    /// parameter is a JSON array of ``FinishedAlone`` rows: planned once per connection, whatever the batch's size.
    static let finishAloneStatement = """
        WITH v AS (
            SELECT * FROM json_to_recordset($1::json)
                AS r(nid text, npartition int8, nowner text, ncounts text, nstate text, ntime float8)),
        done AS (
            UPDATE notification_partitions p SET state = 'Done', lease_owner = NULL, lease_expires = NULL
            FROM v WHERE p.state = 'Processing' AND p.notification_id = v.nid AND p.partition = v.npartition
                AND p.lease_owner = v.nowner
            RETURNING p.notification_id)
        UPDATE notifications SET counts = v.ncounts,
            state = CASE WHEN state = 'Processing' THEN v.nstate ELSE state END,
            end_time = CASE WHEN state = 'Processing' THEN v.ntime ELSE end_time END
        FROM v JOIN done ON done.notification_id = v.nid
        WHERE notifications.id = v.nid
        RETURNING notifications.id, notifications.state
        """

    /// One row of ``finishAloneStatement``'s JSON parameter.
    struct FinishedAlone: Encodable {
        var nid: String
        var npartition: Int
        var nowner: String
        var ncounts: String
        var nstate: String
        var ntime: Double

        init(_ item: Completion) throws {
            let summary = item.checkpoint.summary
            nid = item.id
            npartition = item.partition
            nowner = item.owner
            ncounts = try SQLNotificationStore.encode(summary)
            nstate = SQLNotificationStore.finalState(of: summary).name
            ntime = item.time.timeIntervalSince1970
        }
    }

    /// Rows as the JSON array a prepared statement reads with `json_to_recordset`.
    static func json(_ rows: [some Encodable]) throws -> String {
        String(decoding: try JSONEncoder().encode(rows), as: UTF8.self)
    }

    /// The final state of a notification whose every partition is done, from its counts.
    static func finalState(of summary: DispatchSummary) -> NotificationState {
        summary.total == 0 ? .noTargetFound : summary.count(of: .abandoned) == summary.total ? .abandoned : .completed
    }

    /// Completes partitions inside a transaction with a few statements for the whole batch, however many small
    /// notifications it holds: the partitions still held are marked done with one statement, their notifications'
    /// counts read (and locked, in id order) with one, what remains of each counted with one, every notification's
    /// counts and, when its last partition is done, its final state written with one; failures go in with one
    /// multi-row statement. Returns, per item, `nil` when its owner no longer held the lease (nothing of it is
    /// recorded), the notification's final state for the item that finished it, or `.processing`.
    static func complete(
        _ batch: [Completion], forUpdate: String, on connection: any SQLExecutor
    ) async throws -> [NotificationState?] {
        guard !batch.isEmpty else { return [] }
        var binds: [SQLValue] = []
        binds.reserveCapacity(batch.count * 3)
        for item in batch { binds += [.text(item.id), .integer(item.partition), .text(item.owner)] }
        let doneRows = try await connection.query(
            """
            UPDATE notification_partitions SET state = 'Done', lease_owner = NULL, lease_expires = NULL
            WHERE state = 'Processing' AND (notification_id, partition, lease_owner) IN (
                VALUES \(Array(repeating: "(?, ?, ?)", count: batch.count).joined(separator: ", ")))
            RETURNING notification_id, partition
            """,
            binds)
        struct Key: Hashable {
            var id: String
            var partition: Int
        }
        let done = Set(doneRows.compactMap { row in row.string("notification_id").map { Key(id: $0, partition: row.int("partition") ?? -1) } })
        let held = batch.indices.filter { done.contains(Key(id: batch[$0].id, partition: batch[$0].partition)) }
        var results = [NotificationState?](repeating: nil, count: batch.count)
        guard !held.isEmpty else { return results }

        let ids = Array(Set(held.map { batch[$0].id })).sorted()
        let marks = Array(repeating: "?", count: ids.count).joined(separator: ", ")
        let idBinds = ids.map { SQLValue.text($0) }
        var summaries: [String: DispatchSummary] = [:]
        for row in try await connection.query(
            "SELECT id, counts FROM notifications WHERE id IN (\(marks)) ORDER BY id\(forUpdate)", idBinds)
        {
            guard let id = row.string("id") else { continue }
            summaries[id] = try Self.decodeSummary(row.string("counts") ?? "{}")
        }
        var remaining: [String: Int] = [:]
        for row in try await connection.query(
            """
            SELECT notification_id, COUNT(*) AS n FROM notification_partitions
            WHERE notification_id IN (\(marks)) AND state <> 'Done' GROUP BY notification_id
            """, idBinds)
        {
            if let id = row.string("notification_id") { remaining[id] = row.int("n") ?? 0 }
        }
        var failures: [(String, DeliveryFailure)] = []
        var lastItem: [String: Int] = [:]
        for index in held {
            let item = batch[index]
            summaries[item.id, default: DispatchSummary()].merge(item.checkpoint.summary)
            failures += item.checkpoint.failures.map { (item.id, $0) }
            lastItem[item.id] = index
            results[index] = .processing
        }
        // Every notification's counts, and the final state of those whose last partition is done, with one
        // statement: a final state is written only over `Processing` (a notification cancelled meanwhile keeps its
        // state, which is reported).
        var rows: [SQLValue] = []
        var finishing: [String: (index: Int, state: NotificationState)] = [:]
        for id in ids {
            guard let summary = summaries[id], let index = lastItem[id] else { continue }
            var final = ""
            if remaining[id, default: 0] == 0 {
                let state = Self.finalState(of: summary)
                finishing[id] = (index, state)
                final = state.name
            }
            rows += [.text(id), .text(try Self.encode(summary)), .text(final), .float(batch[index].time.timeIntervalSince1970)]
        }
        if !rows.isEmpty {
            let updated = try await connection.query(
                """
                WITH v(nid, ncounts, nstate, ntime) AS (VALUES \(Array(repeating: "(?, ?, ?, ?)", count: rows.count / 4).joined(separator: ", ")))
                UPDATE notifications SET counts = v.ncounts,
                    state = CASE WHEN v.nstate <> '' AND state = 'Processing' THEN v.nstate ELSE state END,
                    end_time = CASE WHEN v.nstate <> '' AND state = 'Processing' THEN v.ntime ELSE end_time END
                FROM v WHERE notifications.id = v.nid
                RETURNING id, state
                """,
                rows)
            // The item that finished a notification reports its final state (one that ended otherwise, e.g.
            // cancelled, reports that).
            var stored: [String: String] = [:]
            for row in updated { if let id = row.string("id") { stored[id] = row.string("state") } }
            for (id, finish) in finishing {
                results[finish.index] = stored[id].map(NotificationState.init) ?? finish.state
            }
        }
        try await Self.insertFailures(failures, on: connection)
        // Expired channels are applied in the same transaction as the counts that include them.
        for index in held {
            for mark in batch[index].checkpoint.expiredChannels { _ = try await SQLInstallationStore.apply(mark, on: connection) }
        }
        return results
    }

    /// Appends failures (of one or several notifications) with multi-row statements.
    static func insertFailures(_ failures: [(notificationID: String, failure: DeliveryFailure)], on connection: any SQLExecutor) async throws {
        for chunk in stride(from: 0, to: failures.count, by: 100) {
            let slice = failures[chunk..<min(chunk + 100, failures.count)]
            var binds: [SQLValue] = []
            binds.reserveCapacity(slice.count * 7)
            for (id, failure) in slice {
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
    }

    public func claim(_ request: ClaimRequest) async throws -> [Claim] {
        try await database.transaction { connection in
            let time = request.now.timeIntervalSince1970
            let live = try await connection.query(
                "SELECT COUNT(*) AS n FROM hub_nodes WHERE heartbeat_time >= ?", [.float(time - HubNode.livenessSeconds)])
            let nodes = max(1, live.first?.int("n") ?? 1)
            // With several nodes, a transaction takes a node's share of a full batch: the others' claims, running at
            // the same time, find the rest of a burst of small notifications instead of rows this one locked.
            let limit = (request.limit + nodes - 1) / nodes
            var claims: [Claim] = []
            var opened = false
            // Open partitions first (a split notification's, or a dead worker's), one at a time; then a batch of
            // due notifications with one statement. A notification split in that batch leaves partitions open,
            // which the next round may take within this owner's share.
            var lookForOpen = true
            while claims.count < limit {
                if lookForOpen, let claim = try await self.claimOpen(request, nodes: nodes, on: connection) {
                    claims.append(claim)
                    continue
                }
                lookForOpen = false
                var split = false
                let wanted = limit - claims.count
                let due = try await self.claimDue(request, nodes: nodes, limit: wanted, opened: &split, on: connection)
                claims += due
                if split {
                    opened = true
                    lookForOpen = true
                } else if due.count < wanted {
                    // Fewer due than asked for: none is left.
                    break
                }
            }
            // Partitions left open for the other nodes: they learn of them when this transaction commits.
            if opened && nodes > 1 { try await self.database.notifyWork(from: request.owner, on: connection) }
            return claims
        }
    }

    /// A hash of a notification id that is the same in every process run (unlike `hashValue`).
    static func stableHash(_ id: String) -> Int {
        var hash = 5381
        for byte in id.utf8 { hash = (hash &* 33) &+ Int(byte) }
        return hash
    }

    /// One accepted notification to persist.
    struct Enqueue: Sendable {
        var notification: Notification
        var headers: String
        var audience: String
        var scheduledTime: Date?
        var idempotencyKey: String?
        /// Lease the notification to this claim's owner when it is due and needs no split.
        var claim: ClaimRequest?
    }

    static let columns =
        "id, format, body, headers, audience, state, enqueue_time, scheduled_time, start_time, end_time, counts, reason"

    public func enqueue(
        _ notification: Notification, scheduledTime: Date?, idempotencyKey: String?, claim: ClaimRequest?
    ) async throws -> Enqueued {
        let headers = String(decoding: try JSONEncoder().encode(notification.headers), as: UTF8.self)
        let audience = try Self.encode(notification.audience)
        return try await enqueues.submit(
            Enqueue(
                notification: notification, headers: headers, audience: audience, scheduledTime: scheduledTime,
                idempotencyKey: idempotencyKey, claim: scheduledTime == nil ? claim : nil))
    }

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

    /// On PostgreSQL, rows another transaction holds are skipped (claims) or waited for (counts).
    var skipLocked: String { database.dialect.lockForUpdateSkippingLocked }
    var forUpdate: String { database.dialect.lockForUpdate }

    /// Claims one open partition inside a transaction: one nobody holds (not started yet, or left by a worker whose
    /// lease expired) of a notification of which this owner holds less than its fair share. `nodes` is the number
    /// of live nodes.
    func claimOpen(_ request: ClaimRequest, nodes: Int, on connection: any SQLExecutor) async throws -> Claim? {
        let owner = request.owner
        let time = request.now.timeIntervalSince1970
        let lease = time + request.leaseSeconds
        // A partition nobody holds (not started yet, or left by a worker whose lease expired) of a notification of
        // which this owner holds less than its fair share: partitions × nodes > held × live nodes.
        let open = try await connection.query(
            """
            UPDATE notification_partitions SET state = 'Processing', lease_owner = ?, lease_expires = ?,
                claims = claims + 1
            WHERE (notification_id, partition) IN (
                SELECT p.notification_id, p.partition FROM notification_partitions p
                WHERE (p.state = 'Pending' OR (p.state = 'Processing' AND p.lease_expires < ?))
                    AND ? * (
                        SELECT COUNT(*) FROM notification_partitions h
                        WHERE h.notification_id = p.notification_id AND h.state = 'Processing' AND h.lease_owner = ?
                            AND h.lease_expires >= ?)
                    < (SELECT COUNT(*) FROM notification_partitions c WHERE c.notification_id = p.notification_id)
                ORDER BY p.notification_id, p.partition LIMIT 1\(skipLocked))
            RETURNING notification_id, partition, lower_bound, upper_bound, cursor, claims
            """,
            [.text(owner), .float(lease), .float(time), .integer(nodes), .text(owner), .float(time)])
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
        return nil
    }

    /// Claims up to `limit` due notifications inside a transaction with one statement per kind: scheduled ones whose
    /// time has come, then the oldest enqueued ones (each the first rows of an index range, so a backlog costs
    /// nothing here). Each is split into partitions when its audience is large enough, the first partition being
    /// this owner's; the partitions of unsplit notifications are written with one statement. `opened` is set when a
    /// split left partitions open.
    func claimDue(
        _ request: ClaimRequest, nodes: Int, limit: Int, opened: inout Bool, on connection: any SQLExecutor
    ) async throws -> [Claim] {
        let time = request.now.timeIntervalSince1970
        var due: [SQLRow] = []
        for (condition, order, binds) in [
            ("state = 'Scheduled' AND scheduled_time <= ?", "scheduled_time", [SQLValue.float(time)]),
            ("state = 'Enqueued'", "enqueue_time", []),
        ] where due.count < limit {
            let rows = try await connection.query(
                """
                UPDATE notifications SET state = 'Processing', start_time = COALESCE(start_time, ?)
                WHERE id IN (
                    SELECT id FROM notifications WHERE \(condition)
                    ORDER BY state, \(order) LIMIT ?\(skipLocked))
                RETURNING \(Self.columns)
                """,
                [.float(time)] + binds + [.integer(limit - due.count)])
            // RETURNING gives no order: oldest first, as they were queued.
            due += rows.sorted {
                ($0.double("scheduled_time") ?? $0.double("enqueue_time") ?? 0, $0.string("id") ?? "")
                    < ($1.double("scheduled_time") ?? $1.double("enqueue_time") ?? 0, $1.string("id") ?? "")
            }
        }
        var claims: [Claim] = []
        var records: [NotificationRecord] = []
        for row in due {
            do {
                records.append(try Self.decode(row))
            } catch {
                guard let id = row.string("id") else { throw error }
                claims.append(try await Self.end(id: id, reason: Self.unreadable(error), time: time, on: connection))
            }
        }
        let large =
            Self.partitions(request, nodes: nodes) > 1
            ? try await Self.audiences(of: records.map(\.notification), exceed: request.splitAbove, on: connection)
            : records.map { _ in false }
        var single: [SQLValue] = []
        for (record, large) in zip(records, large) {
            let work = try await split(record, large: large, request, nodes: nodes, opened: &opened, on: connection)
            if work.upperBound == nil && work.lowerBound == nil {
                single += Self.partitionRow(record.notification.id, 0, (nil, nil), owner: request.owner, lease: time + request.leaseSeconds)
            }
            claims.append(.work(work))
        }
        try await Self.insertPartitions(single, on: connection)
        return claims
    }

    /// One `notification_partitions` row's values: the first partition is `owner`'s, the others are open.
    static func partitionRow(
        _ id: String, _ index: Int, _ bound: (lower: Int64?, upper: Int64?), owner: String, lease: Double
    ) -> [SQLValue] {
        [
            .text(id), .integer(index),
            bound.lower.map { .integer(Int($0)) } ?? .null, bound.upper.map { .integer(Int($0)) } ?? .null,
            .text(index == 0 ? "Processing" : "Pending"), index == 0 ? .text(owner) : .null,
            index == 0 ? .float(lease) : .null, .integer(index == 0 ? 1 : 0),
        ]
    }

    /// Inserts `notification_partitions` rows (``partitionRow(_:_:_:owner:lease:)`` values, one after another),
    /// 100 rows per statement.
    static func insertPartitions(_ binds: [SQLValue], on connection: any SQLExecutor) async throws {
        try await insertRows(binds, perRow: 8, statement: insertPartitions(count:), on: connection)
    }

    /// A multi-row insert of `count` partitions.
    static func insertPartitions(count: Int) -> String {
        """
        INSERT INTO notification_partitions
            (notification_id, partition, lower_bound, upper_bound, state, lease_owner, lease_expires, claims)
        VALUES \(Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?)", count: count).joined(separator: ", "))
        """
    }

    /// Inserts rows of `perRow` values each (one after another in `values`) with `statement(rows)`, 100 rows per
    /// statement.
    static func insertRows(
        _ values: [SQLValue], perRow: Int, statement: (Int) -> String, on connection: any SQLExecutor
    ) async throws {
        for start in stride(from: 0, to: values.count, by: perRow * 100) {
            let chunk = Array(values[start..<min(start + perRow * 100, values.count)])
            _ = try await connection.query(statement(chunk.count / perRow), chunk)
        }
    }

    /// A newly claimed notification's first partition, splitting it by installation position when its audience is
    /// larger than ``ClaimRequest/splitAbove`` (its partitions are written here). The partition of an unsplit
    /// notification (no bounds) is left for the caller to write.
    func split(
        _ record: NotificationRecord, large: Bool, _ request: ClaimRequest, nodes: Int, opened: inout Bool,
        on connection: any SQLExecutor
    ) async throws -> DeliveryWork {
        let partitions = Self.partitions(request, nodes: nodes)
        var bounds: [(lower: Int64?, upper: Int64?)] = [(nil, nil)]
        if partitions > 1, large {
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
        if bounds.count > 1 {
            // One statement for every partition: the first is this owner's, the others are open.
            var binds: [SQLValue] = []
            binds.reserveCapacity(bounds.count * 8)
            for (index, bound) in bounds.enumerated() {
                binds += Self.partitionRow(
                    record.notification.id, index, bound, owner: request.owner, lease: request.now.timeIntervalSince1970 + request.leaseSeconds)
            }
            try await Self.insertPartitions(binds, on: connection)
            opened = true
        }
        return DeliveryWork(
            record: record, partition: 0, lowerBound: bounds[0].lower.map(InstallationCursor.init(position:)),
            upperBound: bounds[0].upper.map(InstallationCursor.init(position:)), cursor: nil, claims: 1)
    }

    /// Partitions of one notification at most.
    static let maximumPartitions = 1024

    /// How many partitions a large notification is split into.
    static func partitions(_ request: ClaimRequest, nodes: Int) -> Int {
        min(max(request.partitionsPerNode, 1) * nodes, maximumPartitions)
    }

    /// For each notification, whether its audience may have more than `threshold` matches: it has something to
    /// split (not a direct send) and more than `threshold` installations may match it.
    ///
    /// Most audiences are bounded by the tags they require: a tag's index entries (at most `threshold + 1` of them
    /// read) bound the installations carrying it, an AND by its smallest operand, an OR by the sum of its operands.
    /// The tags of every notification in the batch are counted with one statement of single-table index probes,
    /// which the database plans at once however complex the expressions are. Only audiences that no tag
    /// bounds (a broadcast, a negation at the top) are probed by running their query, up to `threshold + 1` rows.
    /// Counts ignore expiry, platform and row kind, so they never fall short: a large audience is always split,
    /// and a small one is at worst split without need.
    static func audiences(
        of notifications: [Notification], exceed threshold: Int, on connection: any SQLExecutor
    ) async throws -> [Bool] {
        var large = [Bool](repeating: false, count: notifications.count)
        var bounded: [(index: Int, expression: TagExpression, tags: Set<String>)] = []
        var probes: [(index: Int, plan: SQLTagQuery)] = []
        for (index, notification) in notifications.enumerated() {
            switch AudienceSize(notification, threshold: threshold) {
            case .small: continue
            case .large: large[index] = true
            case .bounded(let expression, let tags): bounded.append((index, expression, tags))
            case .counted(let plan): probes.append((index, plan))
            }
        }
        let counts = try await tagCounts(
            bounded.reduce(into: Set<String>()) { $0.formUnion($1.tags) }.sorted(), upTo: threshold + 1, on: connection)
        for (index, expression, _) in bounded {
            large[index] = (Self.upperBound(expression, counts: counts) ?? Int.max) > threshold
        }
        for start in stride(from: 0, to: probes.count, by: 32) {
            let chunk = probes[start..<min(start + 32, probes.count)]
            let columns = chunk.enumerated().map { position, probe in
                "(SELECT COUNT(*) FROM (\(probe.plan.sql)) AS p\(position)) AS c\(position)"
            }
            let rows = try await connection.query("SELECT " + columns.joined(separator: ", "), chunk.flatMap(\.plan.binds))
            for (position, probe) in chunk.enumerated() {
                large[probe.index] = (rows.first?.int("c\(position)") ?? 0) > threshold
            }
        }
        return large
    }

    /// How a notification's audience is judged against a split threshold (see ``audiences(of:exceed:on:)``).
    enum AudienceSize {
        /// Nothing to split: a direct send, or an audience that cannot be read.
        case small
        /// Always split (a threshold of 0).
        case large
        /// Bounded by the counts of `tags` (``upperBound(_:counts:)``).
        case bounded(TagExpression, tags: Set<String>)
        /// Counted by running its query, up to `threshold + 1` rows.
        case counted(SQLTagQuery)

        init(_ notification: Notification, threshold: Int) {
            let expression: TagExpression?
            switch notification.audience {
            case .handles, .unreadable:
                self = .small
                return
            case .all: expression = nil
            case .tags(let tags): expression = tags
            }
            guard threshold > 0 else {
                self = .large
                return
            }
            if let expression, case let tags = SQLNotificationStore.boundingTags(expression), !tags.isEmpty {
                self = .bounded(expression, tags: tags)
                return
            }
            let query = InstallationQuery(
                expression: expression, scope: notification.format == .template ? .includingTemplates : .installation,
                includeExpired: false)
            self = .counted(SQLTagQuery(query: query, after: 0, limit: threshold + 1, ridsOnly: true))
        }
    }

    /// How many tag rows (of any scope) carry `tag`, counting at most `limit`: a single-table index probe (both are
    /// SQL: a column, a parameter or a literal).
    static func cappedCount(tag: String, limit: String) -> String {
        "(SELECT COUNT(*) FROM (SELECT 1 FROM installation_tags t WHERE t.tag = \(tag) LIMIT \(limit)) AS c)"
    }

    /// How many tag rows (of any scope) carry each tag, counting at most `limit` per tag: one statement per 256
    /// tags whose single correlated index probe the database plans once, however many tags it is run for.
    static func tagCounts(_ tags: [String], upTo limit: Int, on connection: any SQLExecutor) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for start in stride(from: 0, to: tags.count, by: 256) {
            let chunk = tags[start..<min(start + 256, tags.count)]
            let rows = try await connection.query(
                """
                WITH wanted(tag) AS (VALUES \(Array(repeating: "(?)", count: chunk.count).joined(separator: ", ")))
                SELECT wanted.tag AS tag, \(cappedCount(tag: "wanted.tag", limit: "\(limit)")) AS n FROM wanted
                """,
                chunk.map { .text($0) })
            for row in rows { if let tag = row.string("tag") { counts[tag] = row.int("n") ?? limit } }
            // A tag the answer left out is counted as large: a split is never missed.
            for tag in chunk where counts[tag] == nil { counts[tag] = limit }
        }
        return counts
    }

    /// The tags whose counts bound `expression`'s matches; empty when no tag bounds it (a negation at the top, or
    /// an OR with a negated branch).
    static func boundingTags(_ expression: TagExpression) -> Set<String> {
        switch expression {
        case .tag(let tag): return [tag]
        case .not: return []
        case .and(let operands):
            // Every operand that is bounded is counted; the smallest wins.
            return operands.reduce(into: Set()) { $0.formUnion(boundingTags($1)) }
        case .or(let operands):
            var tags: Set<String> = []
            for operand in operands {
                let branch = boundingTags(operand)
                if branch.isEmpty { return [] }
                tags.formUnion(branch)
            }
            return tags
        }
    }

    /// An upper bound on the installations `expression` matches, from per-tag counts; `nil` when unbounded.
    static func upperBound(_ expression: TagExpression, counts: [String: Int]) -> Int? {
        switch expression {
        case .tag(let tag): return counts[tag]
        case .not: return nil
        case .and(let operands): return operands.compactMap { upperBound($0, counts: counts) }.min()
        case .or(let operands):
            var total = 0
            for operand in operands {
                guard let bound = upperBound(operand, counts: counts) else { return nil }
                total += bound
            }
            return total
        }
    }

    /// ``upperBound(_:counts:)`` as an SQL expression over a `counts(k, n)` table: each tag's count is looked up by
    /// its number in `tags`, which gains the tags not numbered yet. `nil` when unbounded.
    static func upperBoundSQL(_ expression: TagExpression, tags: inout [String: Int]) -> String? {
        switch expression {
        case .tag(let tag):
            let number = tags[tag] ?? tags.count
            tags[tag] = number
            return "(SELECT n FROM counts WHERE k = \(number))"
        case .not: return nil
        case .and(let operands):
            let bounds = operands.compactMap { upperBoundSQL($0, tags: &tags) }
            guard let first = bounds.first else { return nil }
            return bounds.count == 1 ? first : "LEAST(\(bounds.joined(separator: ", ")))"
        case .or(let operands):
            var bounds: [String] = []
            for operand in operands {
                guard let bound = upperBoundSQL(operand, tags: &tags) else { return nil }
                bounds.append(bound)
            }
            return "(\(bounds.joined(separator: " + ")))"
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
            // The other nodes take the partition at once.
            try await self.database.notifyWork(from: owner, on: connection)
            _ = try await connection.query(
                """
                UPDATE notification_partitions SET lease_expires = ?, claims = CASE WHEN claims > 0 THEN claims - 1 ELSE 0 END
                WHERE notification_id = ? AND partition = ? AND lease_owner = ? AND state = 'Processing'
                """,
                [.float(now.timeIntervalSince1970 - 1), .text(id), .integer(partition), .text(owner)])
        }
    }

    public func renewLease(id: String, partition: Int, owner: String, leaseSeconds: Double, now: Date) async throws -> Bool {
        try await database.upkeepTransaction { connection in
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
        let forUpdate = self.forUpdate
        return try await database.transaction { connection in
            try await Self.checkpoint(id, partition, owner, checkpoint, forUpdate: forUpdate, on: connection)
        }
    }

    /// Records a checkpoint inside a transaction: moves the partition's cursor, adds the counts, appends the failures
    /// and applies the expired channels. `false` (nothing recorded) when `owner` no longer holds the lease.
    ///
    /// A checkpoint is progress, so the partition's claim count starts again at the claim that made it: only claims
    /// that end without progress (a crash, an error on every attempt) count toward ``DeliveryWorker/maximumClaims``, and a
    /// fan-out whose leases keep running out on a slow machine is resumed, not ended.
    static func checkpoint(
        _ id: String, _ partition: Int, _ owner: String, _ checkpoint: DispatchCheckpoint, forUpdate: String,
        on connection: any SQLExecutor
    ) async throws -> Bool {
        let held = try await connection.query(
            """
            UPDATE notification_partitions SET cursor = COALESCE(?, cursor), claims = 1
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
        try await insertFailures(checkpoint.failures.map { (id, $0) }, on: connection)
        // Expired channels are applied in the same transaction as the counts that include them.
        for mark in checkpoint.expiredChannels { _ = try await SQLInstallationStore.apply(mark, on: connection) }
        return true
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

    // MARK: Nodes

    public func heartbeat(_ node: HubNode, now: Date) async throws -> [HubNode] {
        let time = now.timeIntervalSince1970
        return try await database.upkeepTransaction { connection in
            _ = try await connection.query(
                """
                INSERT INTO hub_nodes (id, name, started_time, heartbeat_time, delivered) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET heartbeat_time = excluded.heartbeat_time, delivered = excluded.delivered
                """,
                [
                    .text(node.id), .text(node.name), .float(node.startedTime.timeIntervalSince1970), .float(time),
                    .integer(node.delivered),
                ])
            _ = try await connection.query("DELETE FROM hub_nodes WHERE heartbeat_time < ?", [.float(time - 3600)])
            return try await Self.nodes(now: now, on: connection)
        }
    }

    public func nodes(now: Date) async throws -> [HubNode] {
        try await database.upkeepTransaction { connection in try await Self.nodes(now: now, on: connection) }
    }

    static func nodes(now: Date, on connection: any SQLExecutor) async throws -> [HubNode] {
        let rows = try await connection.query(
            """
            SELECT n.id, n.name, n.started_time, n.heartbeat_time, n.delivered,
                (SELECT COUNT(*) FROM notification_partitions p
                 WHERE p.state = 'Processing' AND p.lease_owner = n.id AND p.lease_expires >= ?) AS partitions
            FROM hub_nodes n WHERE n.heartbeat_time >= ? ORDER BY n.name, n.id
            """,
            [.float(now.timeIntervalSince1970), .float(now.timeIntervalSince1970 - HubNode.livenessSeconds)])
        return rows.map { row in
            HubNode(
                id: row.string("id") ?? "", name: row.string("name") ?? "",
                startedTime: Date(timeIntervalSince1970: row.double("started_time") ?? 0),
                heartbeatTime: Date(timeIntervalSince1970: row.double("heartbeat_time") ?? 0),
                delivered: row.int("delivered") ?? 0, partitions: row.int("partitions") ?? 0)
        }
    }

    public func listenForWork(_ wake: @escaping @Sendable (_ sender: String) -> Void) async throws {
        try await database.listenForWork(wake)
    }

    public func leave(nodeID: String) async throws {
        try await database.upkeepTransaction { connection in
            _ = try await connection.query("DELETE FROM hub_nodes WHERE id = ?", [.text(nodeID)])
            // The others' fair share grows: partitions still open are theirs to take.
            try await self.database.notifyWork(from: nodeID, on: connection)
        }
    }

    public func finishPartition(id: String, partition: Int, owner: String, now: Date) async throws -> NotificationState? {
        let forUpdate = self.forUpdate
        return try await database.transaction { connection in
            try await Self.finish(id, partition, owner, now, forUpdate: forUpdate, on: connection)
        }
    }

    /// Marks a partition done inside a transaction and, when it was the last, gives the notification its final
    /// state, which is returned.
    static func finish(
        _ id: String, _ partition: Int, _ owner: String, _ now: Date, forUpdate: String, on connection: any SQLExecutor
    ) async throws -> NotificationState? {
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
