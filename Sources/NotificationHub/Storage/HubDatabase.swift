import Foundation
import Logging
import NIOCore
import SQLiteNIO

/// A value bound to a statement or read from a result, common to the SQL databases the hub supports.
public enum SQLValue: Sendable, Hashable {
    /// SQL `NULL`.
    case null
    /// A 64-bit integer.
    case integer(Int)
    /// A double-precision number.
    case float(Double)
    /// Text.
    case text(String)
    /// Bytes.
    case blob(ByteBuffer)
}

/// The positions of a result's columns by name, shared by all of its rows.
public struct SQLColumns: Sendable {
    let index: [String: Int]

    /// The positions of `names` (the first, for a name given twice).
    public init(_ names: [String]) {
        var index: [String: Int] = [:]
        for (position, name) in names.enumerated() where index[name] == nil { index[name] = position }
        self.index = index
    }
}

/// One result row, read by column name.
public struct SQLRow: Sendable {
    private let index: [String: Int]
    private let values: [SQLValue]

    /// Creates a row from column names and values in the same order.
    public init(columns: [String], values: [SQLValue]) {
        self.init(columns: SQLColumns(columns), values: values)
    }

    /// Creates a row of a result whose column positions were looked up once for all of its rows.
    public init(columns: SQLColumns, values: [SQLValue]) {
        self.index = columns.index
        self.values = values
    }

    /// The value of a column (`.null` when absent).
    public subscript(_ column: String) -> SQLValue {
        guard let position = index[column], position < values.count else { return .null }
        return values[position]
    }

    /// A column as an integer.
    public func int(_ column: String) -> Int? {
        switch self[column] {
        case .integer(let value): value
        case .float(let value): Int(exactly: value)
        case .text(let value): Int(value)
        default: nil
        }
    }

    /// A column as a 64-bit integer.
    public func int64(_ column: String) -> Int64? { int(column).map(Int64.init) }

    /// A column as a number.
    public func double(_ column: String) -> Double? {
        switch self[column] {
        case .float(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    /// A column as text.
    public func string(_ column: String) -> String? {
        switch self[column] {
        case .text(let value): value
        case .blob(let value): String(buffer: value)
        default: nil
        }
    }

    /// A column as bytes.
    public func blob(_ column: String) -> ByteBuffer? {
        switch self[column] {
        case .blob(let value): value
        case .text(let value): ByteBuffer(string: value)
        default: nil
        }
    }
}

/// The SQL dialect a database speaks, for the few statements that differ.
public enum SQLDialect: Sendable, Hashable {
    /// SQLite 3.35 or later.
    case sqlite
    /// PostgreSQL 13 or later.
    case postgres
}

/// What the stores need to know of a dialect, as capabilities (in the manner of sql-kit's `SQLDialect`), so that no
/// store branches on the engine.
extension SQLDialect {
    /// The clause that locks the rows a `SELECT` reads until the transaction ends (with a leading space), or `""`
    /// where transactions are serialised anyway (SQLite's one writer).
    public var lockForUpdate: String {
        switch self {
        case .sqlite: ""
        case .postgres: " FOR UPDATE"
        }
    }

    /// ``lockForUpdate`` that skips rows another transaction holds instead of waiting for them (claims).
    public var lockForUpdateSkippingLocked: String {
        switch self {
        case .sqlite: ""
        case .postgres: " FOR UPDATE SKIP LOCKED"
        }
    }

    /// Whether every statement is a round trip to a server, which commits a lone statement by itself: work is then
    /// worth folding into fewer, larger statements (and `BEGIN` … `COMMIT` costs two more). `false` in process.
    public var statementsAreRoundTrips: Bool {
        switch self {
        case .sqlite: false
        case .postgres: true
        }
    }

    /// How many write transactions may usefully run at once: one where writers are serialised (SQLite), several on
    /// a server whose row locks let independent writes proceed side by side.
    public var concurrentWriters: Int {
        switch self {
        case .sqlite: 1
        case .postgres: 4
        }
    }

    /// How a scan driven by a tag's index entries `d` reaches their installations `i` (see
    /// ``SQLTagQuery/drivenFrom(_:)``).
    var tagDrivenScan: String {
        switch self {
        case .sqlite: "installation_tags d JOIN installations i ON i.rid = d.rid"
        case .postgres: "installation_tags d CROSS JOIN LATERAL (SELECT * FROM installations WHERE rid = d.rid OFFSET 0) i"
        }
    }
}

/// Runs statements inside one transaction. Statements use `?` placeholders in both dialects.
public protocol SQLExecutor: Sendable {
    /// Runs one statement and returns its rows.
    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow]
}

/// Runs statements as a database's reads, each outside a transaction.
struct DatabaseReads: SQLExecutor {
    let database: any HubDatabase

    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await database.read(sql, binds)
    }
}

/// A database the hub's stores run on: the embedded SQLite file or a shared PostgreSQL server.
public protocol HubDatabase: Sendable {
    /// The dialect.
    var dialect: SQLDialect { get }

    /// Whether the database takes writes: degraded while writes are refused for want of disk space
    /// (``StoreCondition``).
    var condition: StoreCondition { get }

    /// Runs `body` in a write transaction, committing on success and rolling back on error.
    func transaction<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T

    /// Runs a read-only statement outside a write transaction.
    func read(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow]

    /// Runs a read-only statement that selects a page of a send's audience
    /// (``InstallationQuery/selectsSendAudience``). A database may serve it from a replica behind the primary
    /// (PostgreSQL's `storage.postgres.readURL`), so it may miss the latest writes; nothing that must see the
    /// caller's own writes reads through it.
    func audienceRead(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow]

    /// What a native send to one tag (one user's devices) reads, page by page: the installations and native
    /// registrations carrying `tag` after position `after`, on `platforms`, not expired, addresses only (see
    /// ``InstallationQuery/Detail/address``), in position order. The same statement runs for every such send, so a
    /// server that plans each statement keeps it prepared; `nil` where the general query is as fast.
    func addressPage(tag: String, after: Int64, platforms: [String], limit: Int) async throws -> [SQLRow]?

    /// Runs one of the hub's fixed statements as a transaction of its own (as ``write(_:_:)``), kept prepared on each
    /// connection by a server that plans every statement: parsed and planned once per connection instead of at
    /// every run. `nil` where there is no such statement (the caller runs the general form).
    func write(prepared statement: PreparedStatement, _ binds: [SQLValue]) async throws -> [SQLRow]?

    /// Writes one installation row and replaces its tag index with one call that commits by itself, where the
    /// database keeps such a call (PostgreSQL's `hub_put_installation`): one round trip instead of a transaction's
    /// five. `nil` where it does not (the caller writes in a transaction); otherwise whether the row was written (a
    /// guarded write of a row it may not replace writes nothing).
    func putInstallation(_ put: InstallationPut) async throws -> Bool?

    /// Runs one writing statement as a transaction of its own: all of its effects commit, or none. Where a server
    /// commits a lone statement by itself, this is one round trip instead of three (`BEGIN`, the statement,
    /// `COMMIT`).
    func write(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow]

    /// Closes the database.
    func close() async throws

    /// Runs `body` in a write transaction on connections kept for a node's own upkeep (heartbeats, lease renewals,
    /// listening), so that it never waits behind the fan-outs' pages and checkpoints for a connection: a lease is
    /// renewed on time however busy the node is. The same as ``transaction(_:)`` where connections are not pooled.
    func upkeepTransaction<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T

    /// Inside a transaction: tells every node listening on the database (``listenForWork(_:)``) that there is new
    /// work once the transaction commits. `sender` comes back to the listeners, so a node can ignore its own news.
    /// Nothing on a database that only one process uses.
    func notifyWork(from sender: String, on connection: any SQLExecutor) async throws

    /// Listens for ``notifyWork(from:on:)`` from any node, calling `wake` with the sender once listening has started
    /// (with an empty sender: work may have been announced while nobody listened) and for each announcement, until
    /// the task is cancelled or the connection is lost (which throws). Returns at once on a database that only one
    /// process uses.
    func listenForWork(_ wake: @escaping @Sendable (_ sender: String) -> Void) async throws

    /// The hub's nodes, kept in this process, for a database that only this process opens (its nodes are all
    /// here: a heartbeat needs no write); `nil` for a database several processes share, whose nodes are recorded in
    /// it (``SharedNodeRegistry``).
    var processNodes: ProcessNodeRegistry? { get }
}

extension HubDatabase {
    public var processNodes: ProcessNodeRegistry? { nil }

    public func audienceRead(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await read(sql, binds)
    }

    public func addressPage(tag: String, after: Int64, platforms: [String], limit: Int) async throws -> [SQLRow]? {
        nil
    }

    public func write(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await transaction { try await $0.query(sql, binds) }
    }

    public func putInstallation(_ put: InstallationPut) async throws -> Bool? {
        nil
    }

    public func write(prepared statement: PreparedStatement, _ binds: [SQLValue]) async throws -> [SQLRow]? {
        nil
    }

    public func upkeepTransaction<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        try await transaction(body)
    }

    public func notifyWork(from sender: String, on connection: any SQLExecutor) async throws {}

    public func listenForWork(_ wake: @escaping @Sendable (_ sender: String) -> Void) async throws {}

    /// Runs a read-only statement without binds.
    public func read(_ sql: String) async throws -> [SQLRow] {
        try await read(sql, [])
    }
}

/// Opens the database a storage configuration names.
public enum HubDatabases {
    /// Opens and migrates the database of `storage`.
    public static func open(storage: StorageConfiguration, logger: Logger) async throws -> any HubDatabase {
        switch storage {
        case .memory, .sqlite:
            return try await SQLiteHubDatabase.open(storage: storage, migrations: SQLiteHubDatabase.hubSchema, logger: logger)
        case .postgres(let settings):
            return try await PostgresHubDatabase.open(settings: settings, logger: logger)
        }
    }
}

/// One installation's write as ``HubDatabase/putInstallation(_:)`` takes it.
public struct InstallationPut: Sendable {
    /// The row's values in the order of ``SQLInstallationStore``'s row columns: id, platform, push channel, whether
    /// the channel is an object, user, tags, templates, push variables, expired, expiration time and last update
    /// (also the creation time of a new row).
    public var row: [SQLValue]
    /// Whether the stored row may be replaced only when it belongs to no user or to the written row's user (and
    /// never when it holds a registration, whether guarded or not).
    public var guarded: Bool
    /// The tag index entries: each tag with its scope (0 for the installation, 1 for its templates' tags).
    public var tags: [(tag: String, scope: Int)]
}

/// The hub's fixed writing statements that a server may keep prepared (``HubDatabase/write(prepared:_:)``): those
/// that run for every small send, in PostgreSQL's dialect (`$n` placeholders).
public enum PreparedStatement: Sendable, CaseIterable {
    /// One send leased at accept, judged by at most one tag's count: ``SQLNotificationStore``'s single-send store.
    case storeOneSend
    /// One partition alone in its notification, finished: ``SQLNotificationStore``'s single finish.
    case finishOneAlone
    /// Sends leased at accept, each judged by at most one tag's count, given as one JSON array: ``SQLNotificationStore``'s
    /// batch store.
    case storeSends
    /// Partitions alone in their notifications, finished, given as one JSON array: ``SQLNotificationStore``'s batch
    /// finish.
    case finishAlone
}
