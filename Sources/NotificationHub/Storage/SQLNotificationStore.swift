import Foundation
import NIOCore

/// The embedded notification store, in the same database file as the installations.
public final class SQLNotificationStore: NotificationStore {
    /// The database the store writes to.
    public let database: any HubDatabase
    /// Where the hub's nodes record their heartbeats: in this process for a database only it opens, else in the
    /// database.
    let nodeRegistry: any NodeRegistry

    /// Concurrent enqueues share one transaction.
    private let enqueues: WriteCombiner<Enqueue, Enqueued>
    /// Concurrent completions share one transaction per lane. PostgreSQL runs several lanes at once (each statement
    /// is a round trip, so one lane bounds small sends at one completion per few round trips); a notification's
    /// partitions always take the same lane, so two lanes never wait for one notification's row.
    private let completions: [WriteCombiner<Completion, NotificationState?>]

    /// Creates a store on a database opened with ``SQLiteHubDatabase/hubSchema``.
    public init(database: any HubDatabase) {
        self.database = database
        nodeRegistry = database.processNodes.map { LocalNodeRegistry(registry: $0, database: database) }
            ?? SharedNodeRegistry(database: database)
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

    public func claim(_ request: ClaimRequest) async throws -> [Claim] {
        try await database.transaction { connection in
            let nodes = try await self.nodeRegistry.liveCount(now: request.now, on: connection)
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
        for replacement in checkpoint.replacedChannels { try await SQLInstallationStore.apply(replacement, on: connection) }
        return true
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
}
