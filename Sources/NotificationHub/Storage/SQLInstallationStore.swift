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
    private let upserts: WriteCombiner<GuardedWrite, Void>

    /// An installation to write, and whether the stored row may be replaced only when it belongs to no user or to
    /// the installation's own user.
    struct GuardedWrite: Sendable {
        var installation: Installation
        var guarded: Bool
    }

    /// Creates a store on an open database with the hub schema (``SQLiteHubDatabase/hubSchema``).
    public init(database: any HubDatabase, clock: any WallClock = SystemWallClock()) {
        self.database = database
        self.clock = clock
        upserts = WriteCombiner { writes in
            if writes.count == 1, try await Self.putAlone(writes[0], on: database) { return [()] }
            return try await database.transaction { connection in
                try await Self.write(writes, on: connection)
                return Array(repeating: (), count: writes.count)
            }
        }
    }

    /// Opens a database with the installation schema.
    public static func open(
        storage: StorageConfiguration, clock: any WallClock = SystemWallClock(), logger: Logger
    ) async throws -> SQLInstallationStore {
        SQLInstallationStore(database: try await HubDatabases.open(storage: storage, logger: logger), clock: clock)
    }

    static let columns =
        "i.rid, i.id, i.platform, i.push_channel, i.channel_is_object, i.user_id, i.tags, i.templates, i.push_variables, i.expired, i.expiration_time, i.last_update, i.kind, i.version, i.created_time, i.registration"
    /// What ``InstallationQuery/Detail/address`` reads.
    static let addressColumns = "i.rid, i.id, i.platform, i.push_channel, i.channel_is_object, i.expired, i.kind"

    // MARK: Writes

    public func upsert(_ installation: Installation, as registrant: Registrant) async throws -> Installation {
        try Self.checkOwner(of: installation, as: registrant)
        var stored = installation
        stored.lastUpdate = HubDateFormat.millisecondPrecision(clock.now())
        stored.expiredPushChannel = false
        try await upserts.submit(GuardedWrite(installation: stored, guarded: registrant != .unrestricted))
        return stored
    }

    /// A guarded write keeps a row only when it belongs to no user or to the written installation's user, so the
    /// installation must name the registrant's user (and none for the Listen key).
    static func checkOwner(of installation: Installation, as registrant: Registrant) throws(HubError) {
        switch registrant {
        case .unrestricted:
            return
        case .listenKey:
            guard installation.userID == nil else {
                throw HubError(.userTokenRequired, "the Listen key may not set userId on this hub; register with the user's token")
            }
        case .user(let user):
            guard installation.userID.map({ $0.utf8.elementsEqual(user.utf8) }) == true else {
                throw HubError(.userMismatch, "userId must be the token's user")
            }
        }
    }

    /// The condition on the `user_id` column that limits a statement to the rows `registrant` reaches, with its
    /// binds: empty for ``Registrant/unrestricted``.
    static func ownerCondition(_ registrant: Registrant, column: String = "user_id") -> (sql: String, binds: [SQLValue]) {
        switch registrant {
        case .unrestricted: ("", [])
        case .listenKey: (" AND \(column) IS NULL", [])
        case .user(let user): (" AND (\(column) IS NULL OR \(column) = ?)", [.text(user)])
        }
    }

    /// Why a guarded write of `id` found no row it may replace: the id is a registration's, or the row belongs to
    /// a user the write does not reach.
    static func refusal(id: String, user: String?, on connection: any SQLExecutor) async throws -> HubError {
        let rows = try await connection.query("SELECT kind FROM installations WHERE id = ?", [.text(id)])
        if let kind = rows.first?.int("kind"), kind != 0 {
            return HubError(.conflict, "'\(id)' is the id of a registration; choose another installationId or delete the registration")
        }
        if user == nil {
            return HubError(
                .conflict,
                "installation '\(id)' belongs to a user; register it with that user's token (Authorization: Bearer <the app's user JWT>) or choose another installationId")
        }
        return HubError(
            .conflict,
            "installation '\(id)' belongs to another user; a device whose signed-in user changed registers under a new installationId (make one at sign-in), or deletes the old installation with the previous user's token first")
    }

    public func upsert(contentsOf installations: [Installation]) async throws {
        let now = HubDateFormat.millisecondPrecision(clock.now())
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
        id: String, as registrant: Registrant, _ change: @Sendable (inout Installation) throws(HubError) -> Void
    ) async throws -> Installation {
        let now = HubDateFormat.millisecondPrecision(clock.now())
        // SQLite serialises write transactions; PostgreSQL needs the row locked for the read-modify-write (and
        // re-checks the owner condition on the row version it locks).
        let lock = database.dialect.lockForUpdate
        let owner = Self.ownerCondition(registrant, column: "i.user_id")
        return try await database.transaction { connection in
            let rows = try await connection.query(
                "SELECT \(Self.columns) FROM installations i WHERE i.id = ? AND i.kind = 0\(owner.sql)\(lock)",
                [.text(id)] + owner.binds)
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

    static func write(_ installations: [Installation], on connection: any SQLExecutor) async throws {
        try await write(installations.map { GuardedWrite(installation: $0, guarded: false) }, on: connection)
    }

    /// Writes installations with multi-row statements: one upsert per chunk returning row ids, one delete of their
    /// old tags, and multi-row inserts of the new tags. A row that holds a registration is never replaced, nor is
    /// a guarded write's row that belongs to another user: such an id fails with ``HubError/Code/conflict``.
    ///
    /// Of several unguarded writes of one id, the last wins, as if they ran one after another. When a guarded write
    /// shares its id with another write, the batch is refused so that the writes are retried one by one (see
    /// ``WriteCombiner``): which of them may write depends on their order.
    static func write(_ writes: [GuardedWrite], on connection: any SQLExecutor) async throws {
        var latest: [String: Int] = [:]
        var guardedIDs: Set<String> = []
        for (index, write) in writes.enumerated() {
            let id = write.installation.installationID
            if latest[id] != nil, write.guarded || guardedIDs.contains(id) {
                throw HubError(.conflict, "installation '\(id)' was written twice in one batch; write it on its own")
            }
            if write.guarded { guardedIDs.insert(id) }
            latest[id] = index
        }
        let unique = writes.enumerated().filter { latest[$0.element.installation.installationID] == $0.offset }.map(\.element)
        let groups = [unique.filter { !$0.guarded }, unique.filter(\.guarded)]
        for group in groups where !group.isEmpty {
            try await write(group.map(\.installation), guarded: group[0].guarded, on: connection)
        }
    }

    /// Writes distinct installations that are all guarded or all not, as described above.
    private static func write(_ unique: [Installation], guarded: Bool, on connection: any SQLExecutor) async throws {
        // A guarded write replaces a row that belongs to no user or to the written installation's own user.
        let ownerGuard = guarded ? " AND (installations.user_id IS NULL OR installations.user_id = excluded.user_id)" : ""
        for start in stride(from: 0, to: unique.count, by: 200) {
            let chunk = Array(unique[start..<min(start + 200, unique.count)])
            var binds: [SQLValue] = []
            binds.reserveCapacity(chunk.count * 12)
            for installation in chunk {
                let row = try rowValues(installation)
                // The last update is also a new row's creation time.
                binds += row + [row[row.count - 1]]
            }
            let values = Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", count: chunk.count).joined(separator: ", ")
            let rows = try await connection.query(
                """
                INSERT INTO installations
                    (id, platform, push_channel, channel_is_object, user_id, tags, templates, push_variables, expired,
                     expiration_time, last_update, created_time)
                VALUES \(values)
                ON CONFLICT(id) DO UPDATE SET
                    platform = excluded.platform, push_channel = excluded.push_channel,
                    channel_is_object = excluded.channel_is_object, user_id = excluded.user_id, tags = excluded.tags,
                    templates = excluded.templates, push_variables = excluded.push_variables, expired = excluded.expired,
                    expiration_time = excluded.expiration_time, last_update = excluded.last_update,
                    version = installations.version + 1
                WHERE installations.kind = 0\(ownerGuard)
                RETURNING rid, id
                """,
                binds)
            var rids: [String: Int] = [:]
            for row in rows {
                if let id = row.string("id"), let rid = row.int("rid") { rids[id] = rid }
            }
            guard rids.count == chunk.count else {
                let taken = chunk.first { rids[$0.installationID] == nil }
                throw try await refusal(id: taken?.installationID ?? "", user: taken?.userID, on: connection)
            }
            let ridList = chunk.map { String(rids[$0.installationID]!) }.joined(separator: ",")
            _ = try await connection.query("DELETE FROM installation_tags WHERE rid IN (\(ridList))", [])
            var entries: [(String, Int, Int)] = []
            for installation in chunk {
                let rid = rids[installation.installationID]!
                for entry in tagEntries(of: installation) { entries.append((entry.tag, rid, entry.scope)) }
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

    /// Writes a lone installation with the database's one-call write (one round trip on PostgreSQL): `false` where
    /// the database has none, and nothing is written (the caller writes in a transaction).
    static func putAlone(_ write: GuardedWrite, on database: any HubDatabase) async throws -> Bool {
        // Only a server has the call (PostgreSQL's): in process the row's values are not built twice.
        guard database.dialect.statementsAreRoundTrips else { return false }
        let installation = write.installation
        let put = InstallationPut(
            row: try rowValues(installation), guarded: write.guarded, tags: tagEntries(of: installation))
        guard let written = try await database.putInstallation(put) else { return false }
        guard written else {
            throw try await refusal(
                id: installation.installationID, user: installation.userID, on: DatabaseReads(database: database))
        }
        return true
    }

    /// An installation's row values, in the order of ``InstallationPut/row``.
    static func rowValues(_ installation: Installation) throws -> [SQLValue] {
        let templates: SQLValue
        if installation.templates.isEmpty {
            templates = .null
        } else {
            templates = .text(String(decoding: try JSONEncoder().encode(installation.templates), as: UTF8.self))
        }
        let isObject: Bool
        if case .object = installation.pushChannel { isObject = true } else { isObject = false }
        return [
            .text(installation.installationID),
            .text(installation.platform.name),
            .text(installation.pushChannel.storageKey),
            .integer(isObject ? 1 : 0),
            installation.userID.map { .text($0) } ?? .null,
            .text(installation.tags.joined(separator: "\n")),
            templates,
            try pushVariablesValue(installation.pushVariables),
            .integer(installation.expiredPushChannel ? 1 : 0),
            installation.expirationTime.map { .float($0.timeIntervalSince1970) } ?? .null,
            .float((installation.lastUpdate ?? Date()).timeIntervalSince1970),
        ]
    }

    /// The `push_variables` column's value: a JSON object, or NULL for none (which costs a read nothing).
    static func pushVariablesValue(_ variables: [String: String]) throws -> SQLValue {
        guard !variables.isEmpty else { return .null }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return .text(String(decoding: try encoder.encode(variables), as: UTF8.self))
    }

    /// An installation's tag index entries: its own and system tags in scope 0, its templates' tags in scope 1, and
    /// its templates' implicit name tags (``InstallationTemplate/implicitTag(name:)``) in scope 2, so that a template
    /// send's candidates grow only by the installations whose template the expression names.
    static func tagEntries(of installation: Installation) -> [(tag: String, scope: Int)] {
        var entries: [(tag: String, scope: Int)] = Set(installation.tags).union(installation.systemTags).map { ($0, 0) }
        var names = Set<String>()
        for name in installation.templates.keys {
            if let tag = InstallationTemplate.implicitTag(name: name) { names.insert(tag) }
        }
        entries += names.map { ($0, 2) }
        var templateTags = Set<String>()
        for template in installation.templates.values { templateTags.formUnion(template.tags) }
        entries += templateTags.map { ($0, 1) }
        return entries
    }

    public func delete(id: String, as registrant: Registrant) async throws -> Bool {
        let owner = Self.ownerCondition(registrant)
        // One statement (its tags go with it): on PostgreSQL one round trip instead of BEGIN, DELETE and COMMIT.
        let rows = try await database.write(
            "DELETE FROM installations WHERE id = ? AND kind = 0\(owner.sql) RETURNING rid", [.text(id)] + owner.binds)
        return !rows.isEmpty
    }

    public func deleteExpired(before now: Date, limit: Int) async throws -> Int {
        // In bounded steps, so that a sweep after a long stop never holds one long write.
        let rows = try await database.write(
            """
            DELETE FROM installations WHERE rid IN (
                SELECT rid FROM installations WHERE expiration_time IS NOT NULL AND expiration_time <= ? AND kind = 0
                ORDER BY expiration_time LIMIT \(max(limit, 1)))
            RETURNING rid
            """,
            [.float(now.timeIntervalSince1970)])
        return rows.count
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
        let rows: [SQLRow]
        if let tagged = try await addressPage(query, after: cursor?.position ?? 0, limit: limit) {
            rows = tagged
        } else {
            let plan = SQLTagQuery(query: query, after: cursor?.position ?? 0, limit: limit, dialect: database.dialect)
            rows = try await query.selectsSendAudience
                ? database.audienceRead(plan.sql, plan.binds) : database.read(plan.sql, plan.binds)
        }
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

    /// The rows of a native send to one tag through ``HubDatabase/addressPage(tag:after:platforms:limit:)``, or
    /// `nil` for any other query or where the database has no such statement.
    private func addressPage(_ query: InstallationQuery, after: Int64, limit: Int) async throws -> [SQLRow]? {
        guard query.detail == .address, case .tag(let tag)? = query.expression, query.scope == .installation,
            !query.includeExpired, query.upTo == nil, query.kinds == .nativeSends,
            let platforms = query.platforms, !platforms.isEmpty
        else { return nil }
        return try await database.addressPage(tag: tag, after: after, platforms: platforms.map(\.name), limit: limit)
    }

    public func count(_ query: InstallationQuery) async throws -> Int {
        let plan = SQLTagQuery(query: query, after: 0, limit: nil, counting: true, dialect: database.dialect)
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
        var pushVariables: [String: String] = [:]
        if let json = row.string("push_variables") {
            pushVariables = try JSONDecoder().decode([String: String].self, from: Data(json.utf8))
        }
        return Installation(
            installationID: id,
            // A registration row's user is its owner, not a user of routing: registrations carry no system tags.
            userID: (row.int("kind") ?? 0) == 0 ? row.string("user_id") : nil,
            platform: Platform(platform),
            pushChannel: pushChannel,
            tags: tagText.isEmpty ? [] : tagText.split(separator: "\n").map(String.init),
            templates: templates,
            pushVariables: pushVariables,
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

    /// The rows of installation `i` for the tag entry `d` that drives a scan. On PostgreSQL each entry looks its
    /// installation up by primary key, and the lookup is fenced (`OFFSET 0`) so that the planner cannot turn it into
    /// a join of its own choosing: with both sides bounded by the cursor it merged a large tag's entries with the
    /// primary key well, but without statistics (a table just filled) it scanned a whole range of installations
    /// for every entry, and with only the entries bounded it read the installations from their start for every page
    /// (645 ms for a page half-way through 1M devices, against 0.5–2.5 ms for the lookups).
    static func drivenFrom(_ dialect: SQLDialect) -> String {
        dialect.tagDrivenScan
    }

    /// - Parameters:
    ///   - ridsOnly: selects only the position (`rid`) of each match, in order.
    ///   - dialect: the database the statement runs on (see ``drivenFrom(_:)``).
    init(
        query: InstallationQuery, after: Int64, limit: Int?, counting: Bool = false, ridsOnly: Bool = false,
        dialect: SQLDialect = .sqlite
    ) {
        var conditions: [String] = []
        var driver: String?
        if let expression = query.expression {
            switch query.scope {
            case .installation:
                driver = Self.drivingTag(expression)
                // The driving tag's own test is the join's: only the rest of the expression is a predicate (none for
                // a single tag, such as a user's), which keeps the statement cheap to plan.
                if let rest = Self.remainder(of: expression, without: driver) {
                    conditions.append(predicate(rest, scopes: "0"))
                }
            case .includingTemplates:
                // Installations without template tags are matched exactly; those with template tags, or with a
                // template named by a tag of the expression (scope 2), are candidates and are refined per template
                // by the caller. A name the expression does not mention cannot change whether a template matches.
                let exact = predicate(expression, scopes: "0")
                let named = expression.tags.sorted()
                binds += named.map { .text($0) }
                let marks = Array(repeating: "?", count: named.count).joined(separator: ", ")
                conditions.append(
                    "(\(exact) OR EXISTS (SELECT 1 FROM installation_tags s WHERE s.rid = i.rid AND s.scope = 1)"
                        + " OR EXISTS (SELECT 1 FROM installation_tags n WHERE n.rid = i.rid AND n.scope = 2 AND n.tag IN (\(marks))))")
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
            // On the driving entries when there are any: they are what the scan reads in order.
            conditions.append("\(driver == nil ? "i" : "d").rid <= ?")
            binds.append(.integer(Int(upTo.position)))
        }
        let selection: String
        if counting {
            selection = "COUNT(*) AS n"
        } else if ridsOnly {
            selection = "i.rid"
        } else {
            selection = query.detail == .address ? SQLInstallationStore.addressColumns : SQLInstallationStore.columns
        }
        var from = "installations i"
        var head: [SQLValue] = []
        if let driver {
            from = Self.drivenFrom(dialect)
            conditions.insert("d.tag = ? AND d.scope = 0", at: 0)
            head.append(.text(driver))
        }
        if !counting {
            conditions.insert("\(driver == nil ? "i" : "d").rid > ?", at: driver == nil ? 0 : 1)
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

    /// What `expression` requires besides carrying `driver`: `nil` when that is all (the expression is the tag),
    /// the other operands when the tag is an operand of its top-level AND, the whole expression otherwise.
    static func remainder(of expression: TagExpression, without driver: String?) -> TagExpression? {
        guard let driver else { return expression }
        switch expression {
        case .tag(let tag) where tag == driver:
            return nil
        case .and(var operands):
            guard let index = operands.firstIndex(of: .tag(driver)) else { return expression }
            operands.remove(at: index)
            switch operands.count {
            case 0: return nil
            case 1: return operands[0]
            default: return .and(operands)
            }
        default:
            return expression
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
