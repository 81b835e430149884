import Foundation
import Logging
import NIOCore

/// The embedded installation store: installations in one table, their tags in an index table so that tag
/// expressions run as index lookups.
public final class SQLInstallationStore: InstallationStore {
    /// The database the store writes to.
    public let database: any HubDatabase
    let clock: any WallClock
    /// Concurrent single-installation writes share one transaction.
    private let upserts: WriteCombiner<Installation, Void>

    /// Creates a store on an open database with the hub schema (``SQLiteHubDatabase/hubSchema``).
    public init(database: any HubDatabase, clock: any WallClock = SystemWallClock()) {
        self.database = database
        self.clock = clock
        upserts = WriteCombiner { installations in
            try await database.transaction { connection in
                try await Self.write(installations, on: connection)
            }
            return Array(repeating: (), count: installations.count)
        }
    }

    /// Opens a database with the installation schema.
    public static func open(
        storage: StorageConfiguration, clock: any WallClock = SystemWallClock(), logger: Logger
    ) async throws -> SQLInstallationStore {
        SQLInstallationStore(database: try await HubDatabases.open(storage: storage, logger: logger), clock: clock)
    }

    static let columns =
        "i.rid, i.id, i.platform, i.push_channel, i.channel_is_object, i.user_id, i.tags, i.templates, i.expired, i.expiration_time, i.last_update, i.kind, i.version, i.created_time, i.registration"

    // MARK: Writes

    public func upsert(_ installation: Installation) async throws -> Installation {
        var stored = installation
        stored.lastUpdate = clock.now()
        stored.expiredPushChannel = false
        try await upserts.submit(stored)
        return stored
    }

    public func upsert(contentsOf installations: [Installation]) async throws {
        let now = clock.now()
        let rows = installations.map { installation in
            var stored = installation
            stored.lastUpdate = now
            stored.expiredPushChannel = false
            return stored
        }
        try await database.transaction { connection in
            try await Self.write(rows, on: connection)
        }
    }

    public func update(
        id: String, _ change: @Sendable (inout Installation) throws(HubError) -> Void
    ) async throws -> Installation {
        let now = clock.now()
        // SQLite serialises write transactions; PostgreSQL needs the row locked for the read-modify-write.
        let lock = database.dialect == .postgres ? " FOR UPDATE" : ""
        return try await database.transaction { connection in
            let rows = try await connection.query(
                "SELECT \(Self.columns) FROM installations i WHERE i.id = ? AND i.kind = 0\(lock)", [.text(id)])
            guard let row = rows.first else {
                throw HubError(.notFound, "installation '\(id)' does not exist")
            }
            var installation = try Self.decode(row)
            let before = installation
            try change(&installation)
            installation.installationID = id
            installation.lastUpdate = now
            if installation.pushChannel != before.pushChannel { installation.expiredPushChannel = false }
            // Otherwise the change decides (adding /pushChannel clears the flag even for the same handle).
            try await Self.write(installation, on: connection)
            return installation
        }
    }

    static func write(_ installation: Installation, on connection: any SQLExecutor) async throws {
        try await write([installation], on: connection)
    }

    /// Writes installations with multi-row statements: one upsert per chunk returning row ids, one delete of their
    /// old tags, and multi-row inserts of the new tags. A row that holds a registration is never replaced: its id
    /// fails with ``HubError/Code/conflict``.
    static func write(_ installations: [Installation], on connection: any SQLExecutor) async throws {
        var latest: [String: Int] = [:]
        for (index, installation) in installations.enumerated() { latest[installation.installationID] = index }
        let unique = installations.enumerated().filter { latest[$0.element.installationID] == $0.offset }.map(\.element)
        for start in stride(from: 0, to: unique.count, by: 200) {
            let chunk = Array(unique[start..<min(start + 200, unique.count)])
            var binds: [SQLValue] = []
            binds.reserveCapacity(chunk.count * 10)
            for installation in chunk {
                let templates: SQLValue
                if installation.templates.isEmpty {
                    templates = .null
                } else {
                    templates = .text(String(decoding: try JSONEncoder().encode(installation.templates), as: UTF8.self))
                }
                let isObject: Bool
                if case .object = installation.pushChannel { isObject = true } else { isObject = false }
                binds += [
                    .text(installation.installationID),
                    .text(installation.platform.name),
                    .text(installation.pushChannel.storageKey),
                    .integer(isObject ? 1 : 0),
                    installation.userID.map { .text($0) } ?? .null,
                    .text(installation.tags.joined(separator: "\n")),
                    templates,
                    .integer(installation.expiredPushChannel ? 1 : 0),
                    installation.expirationTime.map { .float($0.timeIntervalSince1970) } ?? .null,
                    .float((installation.lastUpdate ?? Date()).timeIntervalSince1970),
                    .float((installation.lastUpdate ?? Date()).timeIntervalSince1970),
                ]
            }
            let values = Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", count: chunk.count).joined(separator: ", ")
            let rows = try await connection.query(
                """
                INSERT INTO installations
                    (id, platform, push_channel, channel_is_object, user_id, tags, templates, expired, expiration_time,
                     last_update, created_time)
                VALUES \(values)
                ON CONFLICT(id) DO UPDATE SET
                    platform = excluded.platform, push_channel = excluded.push_channel,
                    channel_is_object = excluded.channel_is_object, user_id = excluded.user_id, tags = excluded.tags,
                    templates = excluded.templates, expired = excluded.expired,
                    expiration_time = excluded.expiration_time, last_update = excluded.last_update,
                    version = installations.version + 1
                WHERE installations.kind = 0
                RETURNING rid, id
                """,
                binds)
            var rids: [String: Int] = [:]
            for row in rows {
                if let id = row.string("id"), let rid = row.int("rid") { rids[id] = rid }
            }
            guard rids.count == chunk.count else {
                let taken = chunk.first { rids[$0.installationID] == nil }?.installationID ?? ""
                throw HubError(
                    .conflict,
                    "'\(taken)' is the id of a registration; choose another installationId or delete the registration")
            }
            let ridList = chunk.map { String(rids[$0.installationID]!) }.joined(separator: ",")
            _ = try await connection.query("DELETE FROM installation_tags WHERE rid IN (\(ridList))", [])
            var entries: [(String, Int, Int)] = []
            for installation in chunk {
                let rid = rids[installation.installationID]!
                for tag in Set(installation.tags).union(installation.systemTags) { entries.append((tag, rid, 0)) }
                var templateTags = Set<String>()
                for template in installation.templates.values { templateTags.formUnion(template.tags) }
                for tag in templateTags { entries.append((tag, rid, 1)) }
            }
            // SQLite allows 32766 parameters per statement.
            for tagStart in stride(from: 0, to: entries.count, by: 1000) {
                let slice = entries[tagStart..<min(tagStart + 1000, entries.count)]
                var tagBinds: [SQLValue] = []
                tagBinds.reserveCapacity(slice.count * 3)
                for (tag, rid, scope) in slice {
                    tagBinds += [.text(tag), .integer(rid), .integer(scope)]
                }
                let tagValues = Array(repeating: "(?, ?, ?)", count: slice.count).joined(separator: ", ")
                _ = try await connection.query(
                    "INSERT INTO installation_tags (tag, rid, scope) VALUES \(tagValues) ON CONFLICT DO NOTHING", tagBinds)
            }
        }
    }

    public func delete(id: String) async throws -> Bool {
        try await database.transaction { connection in
            let rows = try await connection.query(
                "DELETE FROM installations WHERE id = ? AND kind = 0 RETURNING rid", [.text(id)])
            return !rows.isEmpty
        }
    }

    public func markChannelExpired(
        installationID: String, pushChannel: PushChannel, notUpdatedAfter: Date?
    ) async throws -> Bool {
        let mark = ExpiredChannel(
            installationID: installationID, pushChannel: pushChannel, expiredAt: notUpdatedAfter, policy: .markExpired)
        return try await database.transaction { connection in try await Self.apply(mark, on: connection) }
    }

    public func deleteIfChannel(installationID: String, pushChannel: PushChannel) async throws -> Bool {
        let mark = ExpiredChannel(installationID: installationID, pushChannel: pushChannel, expiredAt: nil, policy: .delete)
        return try await database.transaction { connection in try await Self.apply(mark, on: connection) }
    }

    /// Applies an expired-channel mark inside a transaction: an installation that still has the channel (and, with a
    /// platform timestamp, was not updated after it) is marked expired or deleted, by the mark's policy. Returns
    /// whether an installation changed.
    static func apply(_ mark: ExpiredChannel, on connection: any SQLExecutor) async throws -> Bool {
        var binds: [SQLValue] = [.text(mark.installationID), .text(mark.pushChannel.storageKey)]
        var sql: String
        switch mark.policy {
        case .markExpired: sql = "UPDATE installations SET expired = 1 WHERE id = ? AND push_channel = ? AND expired = 0"
        case .delete: sql = "DELETE FROM installations WHERE id = ? AND push_channel = ?"
        }
        if let expiredAt = mark.expiredAt {
            sql += " AND last_update <= ?"
            binds.append(.float(expiredAt.timeIntervalSince1970))
        }
        return !(try await connection.query(sql + " RETURNING rid", binds)).isEmpty
    }

    // MARK: Reads

    public func installation(id: String) async throws -> Installation? {
        let rows = try await database.read(
            "SELECT \(Self.columns) FROM installations i WHERE i.id = ? AND i.kind = 0", [.text(id)])
        return try rows.first.map(Self.decode)
    }

    public func query(
        _ query: InstallationQuery, after cursor: InstallationCursor?, limit: Int
    ) async throws -> InstallationPage {
        let plan = SQLTagQuery(query: query, after: cursor?.position ?? 0, limit: limit)
        let rows = try await database.read(plan.sql, plan.binds)
        var installations: [Installation] = []
        installations.reserveCapacity(rows.count)
        var last: Int64 = cursor?.position ?? 0
        for row in rows {
            last = row.int64("rid") ?? last
            installations.append(try Self.decode(row))
        }
        let next = rows.count == limit ? InstallationCursor(position: last) : nil
        return InstallationPage(installations: installations, next: next)
    }

    public func count(_ query: InstallationQuery) async throws -> Int {
        let plan = SQLTagQuery(query: query, after: 0, limit: nil, counting: true)
        let rows = try await database.read(plan.sql, plan.binds)
        return rows.first?.int("n") ?? 0
    }

    static func decode(_ row: SQLRow) throws -> Installation {
        guard let id = row.string("id"), let platform = row.string("platform"),
            let channel = row.string("push_channel")
        else {
            throw HubError(.storageFailure, "a stored installation row is incomplete")
        }
        let pushChannel: PushChannel
        if row.int("channel_is_object") == 1, case .object(let object)? = try? JSONValue(parsing: Array(channel.utf8)) {
            pushChannel = .object(object)
        } else {
            pushChannel = .handle(channel)
        }
        let tagText = row.string("tags") ?? ""
        var templates: [String: InstallationTemplate] = [:]
        if let json = row.string("templates") {
            templates = try JSONDecoder().decode([String: InstallationTemplate].self, from: Data(json.utf8))
        }
        return Installation(
            installationID: id,
            userID: row.string("user_id"),
            platform: Platform(platform),
            pushChannel: pushChannel,
            tags: tagText.isEmpty ? [] : tagText.split(separator: "\n").map(String.init),
            templates: templates,
            expirationTime: row.double("expiration_time").map { Date(timeIntervalSince1970: $0) },
            lastUpdate: row.double("last_update").map { Date(timeIntervalSince1970: $0) },
            expiredPushChannel: row.int("expired") == 1)
    }
}

/// Compiles an ``InstallationQuery`` to SQL.
///
/// A tag expression becomes a boolean predicate of `EXISTS` index probes (the set algebra of the expression,
/// evaluated per row); when the expression requires one positive tag, the scan is driven from that tag's index
/// entries instead of the whole table. Keyset paging on `rid` keeps every page an index range scan.
struct SQLTagQuery {
    private(set) var sql = ""
    private(set) var binds: [SQLValue] = []

    /// - Parameter ridsOnly: selects only the position (`rid`) of each match, in order.
    init(query: InstallationQuery, after: Int64, limit: Int?, counting: Bool = false, ridsOnly: Bool = false) {
        var conditions: [String] = []
        var driver: String?
        if let expression = query.expression {
            switch query.scope {
            case .installation:
                driver = Self.drivingTag(expression)
                conditions.append(predicate(expression, scopes: "0"))
            case .includingTemplates:
                // Installations without template tags are matched exactly; those with template tags are all
                // candidates and are refined per template by the caller.
                let exact = predicate(expression, scopes: "0")
                conditions.append(
                    "(\(exact) OR EXISTS (SELECT 1 FROM installation_tags s WHERE s.rid = i.rid AND s.scope = 1))")
            }
        }
        if let platforms = query.platforms {
            conditions.append("i.platform IN (\(Array(repeating: "?", count: max(platforms.count, 1)).joined(separator: ", ")))")
            binds.append(contentsOf: platforms.isEmpty ? [.text("")] : platforms.map { .text($0.name) })
        }
        if !query.includeExpired { conditions.append("i.expired = 0") }
        if query.kinds != .all {
            let kinds = query.kinds.storedValues
            conditions.append(kinds.isEmpty ? "0 = 1" : "i.kind IN (\(kinds.map(String.init).joined(separator: ", ")))")
        }
        if let upTo = query.upTo {
            conditions.append("i.rid <= ?")
            binds.append(.integer(Int(upTo.position)))
        }
        let selection = counting ? "COUNT(*) AS n" : ridsOnly ? "i.rid" : SQLInstallationStore.columns
        var from = "installations i"
        var head: [SQLValue] = []
        if let driver {
            from = "installation_tags d JOIN installations i ON i.rid = d.rid"
            conditions.insert("d.tag = ? AND d.scope = 0", at: 0)
            head.append(.text(driver))
        }
        if !counting {
            conditions.insert("\(driver == nil ? "i.rid" : "d.rid") > ?", at: driver == nil ? 0 : 1)
            head.append(.integer(Int(after)))
        }
        binds = head + binds
        sql = "SELECT \(selection) FROM \(from)"
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        if let limit, !counting {
            sql += " ORDER BY \(driver == nil ? "i.rid" : "d.rid") LIMIT \(limit)"
        }
    }

    private mutating func predicate(_ expression: TagExpression, scopes: String) -> String {
        switch expression {
        case .tag(let tag):
            binds.append(.text(tag))
            return "EXISTS (SELECT 1 FROM installation_tags t WHERE t.tag = ? AND t.rid = i.rid AND t.scope IN (\(scopes)))"
        case .not(let operand):
            return "NOT \(predicate(operand, scopes: scopes))"
        case .and(let operands):
            return "(" + operands.map { predicate($0, scopes: scopes) }.joined(separator: " AND ") + ")"
        case .or(let operands):
            return "(" + operands.map { predicate($0, scopes: scopes) }.joined(separator: " OR ") + ")"
        }
    }

    /// A tag every match must carry, if the expression has one at its top-level conjunction.
    static func drivingTag(_ expression: TagExpression) -> String? {
        switch expression {
        case .tag(let tag): tag
        case .and(let operands): operands.lazy.compactMap(drivingTag).first
        case .or(let operands):
            // `a || a` style duplicates aside, an OR has a single driver only when all branches share it.
            {
                let drivers = operands.map(drivingTag)
                guard let first = drivers.first ?? nil, drivers.allSatisfy({ $0 == first }) else { return nil }
                return first
            }()
        case .not: nil
        }
    }
}
