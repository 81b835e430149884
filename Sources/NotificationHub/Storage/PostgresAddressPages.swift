import Logging
import PostgresNIO

/// The audience reads of sends to one tag (one user's devices), combined: concurrent reads go to the server as one
/// statement that reads every tag's page (``AddressPages``), the way group commit combines writes. A send alone
/// reads with ``PostgresHubDatabase/AddressPage`` at once; under a stream of per-user sends, a batch's audiences cost
/// one round trip and one executor start instead of one per send.
///
/// Reads take one of two lanes by tag, so a fan-out's large page delays at most half of the small reads.
final class PostgresAddressPages: Sendable {
    /// One send's page, as ``HubDatabase/addressPage(tag:after:platforms:limit:)`` asks for it.
    struct Request: Sendable {
        var tag: String
        var after: Int64
        var platforms: [String]
        var limit: Int
    }

    private let lanes: [WriteCombiner<Request, [SQLRow]>]

    /// Reads through `reads` (a replica's connections where there is one); `preparing` says whether statements are
    /// kept prepared on a connection (not behind a pooler in transaction mode).
    init(reads: PostgresAudienceReads, preparing: Bool, logger: Logger) {
        lanes = (0..<2).map { _ in
            WriteCombiner(maximumBatch: 128) { batch in
                try await reads.withConnection { connection in
                    try await Self.read(batch, on: connection, preparing: preparing, logger: logger)
                }
            }
        }
    }

    func page(_ request: Request) async throws -> [SQLRow] {
        let lane = lanes[Int(UInt(bitPattern: SQLNotificationStore.stableHash(request.tag)) % UInt(lanes.count))]
        return try await lane.submit(request)
    }

    /// Every request's rows, in order, read on a connection of `client`.
    static func read(
        _ batch: [Request], client: PostgresClient, preparing: Bool = true, logger: Logger
    ) async throws -> [[SQLRow]] {
        try await client.withConnection { connection in
            try await read(batch, on: connection, preparing: preparing, logger: logger)
        }
    }

    /// Every request's rows, in order, read on one connection: one statement per set of platforms in the batch.
    static func read(
        _ batch: [Request], on connection: PostgresConnection, preparing: Bool, logger: Logger
    ) async throws -> [[SQLRow]] {
        if batch.count == 1, let request = batch.first {
            return [
                try await rows(
                    of: PostgresHubDatabase.AddressPage(
                        tag: request.tag, after: request.after, platforms: request.platforms, limit: Int64(request.limit)),
                    on: connection, preparing: preparing, logger: logger)
            ]
        }
        var results = [[SQLRow]](repeating: [], count: batch.count)
        var groups: [[String]: [Int]] = [:]
        for (index, request) in batch.enumerated() { groups[request.platforms, default: []].append(index) }
        for (platforms, indices) in groups {
            let statement = AddressPages(
                tags: indices.map { batch[$0].tag }, after: indices.map { batch[$0].after },
                limits: indices.map { Int64(batch[$0].limit) }, platforms: platforms)
            for row in try await rows(of: statement, on: connection, preparing: preparing, logger: logger) {
                // `k` numbers the requests of the statement from 1.
                guard let k = row.int("k"), (1...indices.count).contains(k) else {
                    throw HubError(.storageFailure, "a combined audience read answered a row of no request")
                }
                results[indices[k - 1]].append(row)
            }
        }
        return results
    }

    /// The rows of one of the hub's fixed statements: prepared on the connection (parsed and planned once per
    /// connection) when `preparing`, otherwise the same text as an unnamed statement, which a pooler in
    /// transaction mode passes to whichever server connection runs the transaction.
    static func rows<Statement: PostgresPreparedStatement>(
        of statement: Statement, on connection: PostgresConnection, preparing: Bool, logger: Logger
    ) async throws -> [SQLRow] where Statement.Row == PostgresRow {
        var rows: [SQLRow] = []
        var names: SQLColumns?
        if preparing {
            for try await row in try await connection.execute(statement, logger: logger) {
                rows.append(try PostgresHubDatabase.Executor.row(row, names: &names))
            }
        } else {
            let query = PostgresQuery(unsafeSQL: Statement.sql, binds: try statement.makeBindings())
            for try await row in try await connection.query(query, logger: logger) {
                rows.append(try PostgresHubDatabase.Executor.row(row, names: &names))
            }
        }
        return rows
    }

    /// Pages of several tags on the same platforms, each as ``PostgresHubDatabase/AddressPage`` reads it: `$1` the
    /// tags, `$2` the position after which each page starts, `$3` each page's size, `$4` the platforms. Each row
    /// carries `k`, the number (from 1) of the tag it was read for; rows come in order of `k`, then of position.
    struct AddressPages: PostgresPreparedStatement {
        static let name = "hub_address_pages"
        static let sql = """
            SELECT w.k, x.* FROM unnest($1::text[], $2::int8[], $3::int8[]) WITH ORDINALITY AS w(wtag, wafter, wlimit, k)
            CROSS JOIN LATERAL (
                SELECT \(SQLInstallationStore.addressColumns) FROM \(SQLTagQuery.drivenFrom(.postgres))
                WHERE d.tag = w.wtag AND d.scope = 0 AND d.rid > w.wafter AND i.platform = ANY($4) AND i.expired = 0
                    AND i.kind IN (\(AudienceKinds.nativeSends.storedValues.map(String.init).joined(separator: ", ")))
                ORDER BY d.rid LIMIT w.wlimit) x
            ORDER BY w.k, x.rid
            """
        static let bindingDataTypes: [PostgresDataType] = [.textArray, .int8Array, .int8Array, .textArray]

        var tags: [String]
        var after: [Int64]
        var limits: [Int64]
        var platforms: [String]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 4)
            bindings.append(tags)
            bindings.append(after)
            bindings.append(limits)
            bindings.append(platforms)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }
}
