import Foundation

/// The delivery ledger's completions: a partition's last checkpoint and finish, alone or set-wise for a batch, and
/// the failures they append.
extension SQLNotificationStore {
    /// Finishes notifications that each had one partition and nothing recorded before, with one statement that
    /// commits by itself (PostgreSQL): a data-modifying `WITH` marks the partitions still held done, and the
    /// statement writes the counts and final state of their notifications (over `Processing` only, as
    /// ``complete(_:forUpdate:on:)`` does). With nothing stored to merge and no other partition to wait for,
    /// nothing needs reading first. `nil` when the batch needs a transaction: an item that is not alone, failures or
    /// expired channels to record, or too many items for one statement.
    static func finishAlone(_ batch: [Completion], database: any HubDatabase) async throws -> [NotificationState?]? {
        guard database.dialect.statementsAreRoundTrips, batch.count <= 100,
            batch.allSatisfy({
                $0.alone && $0.checkpoint.failures.isEmpty && $0.checkpoint.expiredChannels.isEmpty
                    && $0.checkpoint.replacedChannels.isEmpty
            }),
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
            for replacement in batch[index].checkpoint.replacedChannels {
                try await SQLInstallationStore.apply(replacement, on: connection)
            }
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
}
