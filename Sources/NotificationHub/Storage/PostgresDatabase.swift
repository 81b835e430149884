import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO

/// A PostgreSQL database shared by several hub nodes: a connection pool (postgres-nio's `PostgresClient`) whose
/// connections use the hub's own schema. Migrations run on open under an advisory lock, so nodes that start at the
/// same time apply each step once.
///
/// Behind a connection pooler (``StorageConfiguration/PostgresSettings/pooler``) the hub sets no session state: it
/// sends no `search_path` (the pooler's side sets the schema, checked at open), and in transaction mode it keeps no
/// statement prepared and listens only on a direct connection of its own (``StorageConfiguration/PostgresSettings/listenServer``).
/// With a replica (``StorageConfiguration/PostgresSettings/replica``), sends' audiences are read from it
/// (``PostgresAudienceReads``).
public final class PostgresHubDatabase: HubDatabase {
    let client: PostgresClient
    /// A small pool of its own for the node's upkeep: the connection listening for work, heartbeats and lease
    /// renewals never wait behind the fan-outs for a connection.
    let upkeep: PostgresClient
    /// A direct session connection for `LISTEN` (`listenURL`), where one is configured.
    let listener: PostgresClient?
    let settings: StorageConfiguration.PostgresSettings
    let logger: Logger
    public let condition = StoreCondition()
    /// Where sends' audiences are read: the replica's pool, or the primary's.
    let audienceReads: PostgresAudienceReads
    /// Concurrent audience reads of one-tag sends, combined into one statement.
    let addressPages: PostgresAddressPages
    private let running: Task<Void, Never>

    public var dialect: SQLDialect { .postgres }

    /// Whether the hub's fixed statements are kept prepared on each connection (not behind a pooler in transaction
    /// mode, where the next transaction may run on another server connection that never saw them).
    var preparesStatements: Bool { settings.pooler.preparesStatements }

    private init(
        client: PostgresClient, upkeep: PostgresClient, listener: PostgresClient?, replica: PostgresClient?,
        settings: StorageConfiguration.PostgresSettings, logger: Logger, started: AsyncStream<Void>.Continuation
    ) {
        self.client = client
        self.upkeep = upkeep
        self.listener = listener
        self.settings = settings
        self.logger = logger
        audienceReads = PostgresAudienceReads(primary: client, replica: replica, logger: logger)
        addressPages = PostgresAddressPages(
            reads: audienceReads, preparing: settings.pooler.preparesStatements, logger: logger)
        // The pools need their run loops for as long as the database is open; `close()` ends them. Each loop says
        // when it starts, so that the first lease (the migrations) comes after it.
        let pools = [client, upkeep] + [listener, replica].compactMap { $0 }
        running = Task {
            await withDiscardingTaskGroup { group in
                for pool in pools {
                    group.addTask {
                        started.yield()
                        await pool.run()
                    }
                }
            }
        }
    }

    /// Connections of the upkeep pool: one listening, two for heartbeats and renewals.
    static let upkeepConnections = 3

    /// How long opening waits for the listening connection (`listenURL`) or the replica (`readURL`) to answer.
    static let openCheckLimit = Duration.seconds(10)

    /// The configuration of a pool on `server`: `search_path` names the hub's schema when the server takes it
    /// (no pooler in between).
    static func configuration(
        _ server: StorageConfiguration.PostgresSettings.Server, schema: String?, connections: Int
    ) throws -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: server.host, port: server.port, username: server.username, password: server.password,
            database: server.database, tls: server.requireTLS ? .require(try .clientDefault) : .disable)
        configuration.options.maximumConnections = connections
        if let schema { configuration.options.additionalStartupParameters = [("search_path", schema)] }
        return configuration
    }

    /// Connects, creates the hub's schema if needed and applies migrations newer than its version.
    public static func open(
        settings: StorageConfiguration.PostgresSettings, migrations: [SQLiteHubDatabase.Migration] = postgresSchema,
        logger: Logger
    ) async throws -> PostgresHubDatabase {
        let searchPath = settings.pooler.setsSearchPath ? settings.schema : nil
        let configuration = try Self.configuration(
            settings.server, schema: searchPath, connections: settings.maximumConnections)
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        var upkeepConfiguration = configuration
        upkeepConfiguration.options.maximumConnections = upkeepConnections
        let upkeep = PostgresClient(configuration: upkeepConfiguration, backgroundLogger: logger)
        // LISTEN needs no schema; the listening connection sends no startup parameter a pooler could refuse.
        let listener = try settings.listenServer.map {
            PostgresClient(configuration: try Self.configuration($0, schema: nil, connections: 1), backgroundLogger: logger)
        }
        let replica = try settings.replica.map {
            PostgresClient(
                configuration: try Self.configuration($0, schema: searchPath, connections: settings.maximumConnections),
                backgroundLogger: logger)
        }
        let (started, starting) = AsyncStream<Void>.makeStream()
        let database = PostgresHubDatabase(
            client: client, upkeep: upkeep, listener: listener, replica: replica, settings: settings, logger: logger,
            started: starting)
        for await _ in started.prefix(2 + (listener == nil ? 0 : 1) + (replica == nil ? 0 : 1)) {}
        do {
            try await database.migrate(migrations)
            try await database.checkListener()
            try await database.checkReplica()
        } catch {
            try? await database.close()
            throw error
        }
        if settings.listens == nil {
            logger.notice(
                "not listening for work announced by other nodes (pooler: transaction without listenURL): work they accept is found at the next look for work",
                metadata: ["db.schema": "\(settings.schema)"])
        }
        return database
    }

    /// A stable advisory lock key for schema changes of one hub schema.
    var migrationLockKey: Int {
        var hash: Int = 5381
        for byte in settings.schema.utf8 { hash = (hash &* 33) &+ Int(byte) }
        return hash & 0x7fff_ffff
    }

    private func migrate(_ migrations: [SQLiteHubDatabase.Migration]) async throws {
        let schema = settings.schema
        let lockKey = migrationLockKey
        try await transaction { connection in
            _ = try await connection.query("SELECT pg_advisory_xact_lock(?)", [.integer(lockKey)])
            _ = try await connection.query("CREATE SCHEMA IF NOT EXISTS \(schema)", [])
            if !self.settings.pooler.setsSearchPath {
                try await Self.checkSchema(on: connection, settings: self.settings)
            }
            _ = try await connection.query(
                "CREATE TABLE IF NOT EXISTS \(schema).hub_schema_version (version BIGINT NOT NULL)", [])
            let rows = try await connection.query("SELECT MAX(version) AS version FROM \(schema).hub_schema_version", [])
            let current = rows.first?.int("version") ?? 0
            for migration in migrations.sorted(by: { $0.version < $1.version }) where migration.version > current {
                for statement in migration.statements {
                    _ = try await connection.query(statement, [])
                }
                _ = try await connection.query(
                    "INSERT INTO \(schema).hub_schema_version (version) VALUES (?)", [.integer(migration.version)])
                self.logger.info("applied schema migration", metadata: ["db.version": "\(migration.version)", "db.schema": "\(schema)"])
            }
        }
    }

    public func transaction<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        try await transaction(on: client, body)
    }

    public func upkeepTransaction<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        try await transaction(on: upkeep, body)
    }

    /// A transaction on a connection of `client`; a write refused for want of space (`53100 disk_full`) throws
    /// ``HubError/Code/storeFull``.
    private func transaction<T: Sendable>(on client: PostgresClient, _ body: (any SQLExecutor) async throws -> T) async throws -> T {
        try await condition.write { try await client.withConnection { connection in
            let executor = Executor(connection: connection, logger: logger)
            _ = try await executor.query("BEGIN", [])
            do {
                let result = try await body(executor)
                _ = try await executor.query("COMMIT", [])
                return result
            } catch {
                _ = try? await executor.query("ROLLBACK", [])
                throw error
            }
        } }
    }

    public func read(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await client.withConnection { connection in
            try await Executor(connection: connection, logger: logger).query(sql, binds)
        }
    }

    /// On the replica where there is one (``PostgresAudienceReads``), else as ``read(_:_:)``.
    public func audienceRead(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        let logger = self.logger
        return try await audienceReads.withConnection { connection in
            try await Executor(connection: connection, logger: logger).query(sql, binds)
        }
    }

    /// A prepared statement on each connection: parsed and planned once per connection (unnamed behind a pooler in
    /// transaction mode), read from the replica where there is one. Concurrent reads are combined into one statement
    /// (``PostgresAddressPages``).
    public func addressPage(tag: String, after: Int64, platforms: [String], limit: Int) async throws -> [SQLRow]? {
        try await addressPages.page(.init(tag: tag, after: after, platforms: platforms, limit: limit))
    }

    /// The statement of ``addressPage(tag:after:platforms:limit:)``; its columns are ``SQLInstallationStore``'s
    /// address columns. Each tag entry looks its installation up as ``SQLTagQuery/drivenFrom(_:)`` describes.
    struct AddressPage: PostgresPreparedStatement {
        static let name = "hub_address_page"
        static let sql = """
            SELECT \(SQLInstallationStore.addressColumns) FROM \(SQLTagQuery.drivenFrom(.postgres))
            WHERE d.tag = $1 AND d.scope = 0 AND d.rid > $2 AND i.platform = ANY($3) AND i.expired = 0
                AND i.kind IN (\(AudienceKinds.nativeSends.storedValues.map(String.init).joined(separator: ", ")))
            ORDER BY d.rid LIMIT $4
            """
        static let bindingDataTypes: [PostgresDataType] = [.text, .int8, .textArray, .int8]

        var tag: String
        var after: Int64
        var platforms: [String]
        var limit: Int64

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 4)
            bindings.append(tag)
            bindings.append(after)
            bindings.append(platforms)
            bindings.append(limit)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    public func write(prepared statement: PreparedStatement, _ binds: [SQLValue]) async throws -> [SQLRow]? {
        try await condition.write { try await run(Self.text(of: statement), binds) }
    }

    /// The text of each of the hub's prepared writes.
    static func text(of statement: PreparedStatement) -> any PreparedText.Type {
        switch statement {
        case .storeOneSend: StoreOneSend.self
        case .finishOneAlone: FinishOneAlone.self
        case .storeSends: StoreSends.self
        case .finishAlone: FinishAlone.self
        }
    }

    private func run<Text: PreparedText>(_ text: Text.Type, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await run(Prepared<Text>(binds: binds))
    }

    /// Runs one of the fixed statements on a connection of the pool, outside a transaction (it commits by itself):
    /// prepared on the connection, or unnamed behind a pooler in transaction mode.
    private func run<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [SQLRow]
    where Statement.Row == PostgresRow {
        try await client.withConnection { connection in
            try await PostgresAddressPages.rows(
                of: statement, on: connection, preparing: preparesStatements, logger: logger)
        }
    }

    public func putInstallation(_ put: InstallationPut) async throws -> Bool? {
        let rows = try await condition.write { try await run(PutInstallation(put: put)) }
        guard let row = rows.first else { throw HubError(.storageFailure, "writing an installation returned no row") }
        return row.int("rid") != nil
    }

    /// Calls the schema's `hub_put_installation` (migration 12) with the values of an ``InstallationPut``.
    struct PutInstallation: PostgresPreparedStatement {
        static let name = "hub_put_installation_v12"
        static let sql = "SELECT hub_put_installation($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) AS rid"
        static let bindingDataTypes: [PostgresDataType] = [
            .text, .text, .text, .int8, .text, .text, .text, .text, .int8, .float8, .float8, .bool, .textArray,
            .int8Array,
        ]

        var put: InstallationPut

        func makeBindings() throws -> PostgresBindings {
            guard put.row.count == 11 else {
                throw HubError(.storageFailure, "an installation row has 11 values, not \(put.row.count)")
            }
            var bindings = PostgresBindings(capacity: 14)
            for value in put.row { Executor.append(value, to: &bindings) }
            bindings.append(put.guarded)
            bindings.append(put.tags.map(\.tag))
            bindings.append(put.tags.map { Int64($0.scope) })
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    /// The name, text and parameter types of one of the ``PreparedStatement``s.
    protocol PreparedText {
        /// The statement's name on a connection: unique among the hub's statements within PostgreSQL's 63 bytes
        /// (a longer name is cut there, so two statements could share it).
        static var name: String { get }
        static var sql: String { get }
        static var types: [PostgresDataType] { get }
    }

    /// A ``PreparedText`` with its values; each text is its own statement name on a connection.
    struct Prepared<Text: PreparedText>: PostgresPreparedStatement {
        static var name: String { Text.name }
        static var sql: String { Text.sql }
        static var bindingDataTypes: [PostgresDataType] { Text.types }

        var binds: [SQLValue]

        func makeBindings() throws -> PostgresBindings {
            guard binds.count == Text.types.count else {
                throw HubError(.storageFailure, "a prepared statement takes \(Text.types.count) values, not \(binds.count)")
            }
            var bindings = PostgresBindings(capacity: binds.count)
            for value in binds { Executor.append(value, to: &bindings) }
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    /// The names of every statement the hub prepares.
    static var preparedNames: [String] {
        [AddressPage.name, PostgresAddressPages.AddressPages.name, PutInstallation.name] + PreparedStatement.allCases.map { text(of: $0).name }
    }

    enum StoreOneSend: PreparedText {
        static let name = "hub_store_one_send"
        static let sql = SQLNotificationStore.storeOneSendStatement
        static let types: [PostgresDataType] = [
            .text, .text, .bytea, .text, .text, .float8, .float8, .text, .float8, .text, .int8, .int8,
        ]
    }

    enum FinishOneAlone: PreparedText {
        static let name = "hub_finish_one_alone"
        static let sql = SQLNotificationStore.finishOneAloneStatement
        static let types: [PostgresDataType] = [.text, .int8, .text, .text, .text, .float8]
    }

    enum StoreSends: PreparedText {
        static let name = "hub_store_sends"
        static let sql = SQLNotificationStore.storeSendsStatement
        static let types: [PostgresDataType] = [.text]
    }

    enum FinishAlone: PreparedText {
        static let name = "hub_finish_alone"
        static let sql = SQLNotificationStore.finishAloneStatement
        static let types: [PostgresDataType] = [.text]
    }

    /// Outside `BEGIN` … `COMMIT`, the server runs a statement as a transaction of its own.
    public func write(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await condition.write { try await read(sql, binds) }
    }

    public func close() async throws {
        running.cancel()
        await running.value
    }

    /// The `NOTIFY` channel of this hub's schema (a channel name is at most 63 bytes).
    var workChannel: String { String(("hub_work_" + settings.schema).prefix(63)) }

    public func notifyWork(from sender: String, on connection: any SQLExecutor) async throws {
        _ = try await connection.query("SELECT pg_notify(?, ?)", [.text(workChannel), .text(sender)])
    }

    /// Listens on the direct connection of `listenURL` when there is one, else on a connection of the upkeep pool;
    /// returns at once behind a pooler in transaction mode without `listenURL` (the node then finds other nodes'
    /// work at its next look for work).
    public func listenForWork(_ wake: @escaping @Sendable (_ sender: String) -> Void) async throws {
        guard let pool = listener ?? (settings.pooler.keepsSessions ? upkeep : nil) else { return }
        let channel = workChannel
        try await pool.withConnection { connection in
            try await connection.listen(on: channel) { notifications in
                wake("")
                for try await notification in notifications { wake(notification.payload) }
            }
        }
        try Task.checkCancellation()
        throw HubError(.storageFailure, "the connection listening for work closed")
    }

    /// Runs statements on one connection: `?` placeholders become `$1, $2, …`, values are converted both ways.
    struct Executor: SQLExecutor {
        let connection: PostgresConnection
        let logger: Logger

        func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
            var bindings = PostgresBindings(capacity: binds.count)
            for value in binds { Self.append(value, to: &bindings) }
            let rows = try await connection.query(
                PostgresQuery(unsafeSQL: Self.numbered(sql), binds: bindings), logger: logger)
            var result: [SQLRow] = []
            var names: SQLColumns?
            for try await row in rows { result.append(try Self.row(row, names: &names)) }
            return result
        }

        /// Appends a value as the PostgreSQL type it converts to: `int8`, `float8`, `text` or `bytea`.
        static func append(_ value: SQLValue, to bindings: inout PostgresBindings) {
            switch value {
            case .null: bindings.appendNull()
            case .integer(let value): bindings.append(value)
            case .float(let value): bindings.append(value)
            case .text(let value): bindings.append(value)
            case .blob(let value): bindings.append(value)
            }
        }

        /// One row, converted; `names` are its result's column names, looked up with the first row.
        static func row(_ row: PostgresRow, names: inout SQLColumns?) throws -> SQLRow {
            let random = PostgresRandomAccessRow(row)
            var values: [SQLValue] = []
            values.reserveCapacity(random.count)
            var columnNames: [String] = []
            for cell in random {
                if names == nil { columnNames.append(cell.columnName) }
                values.append(try Self.value(cell))
            }
            let columns = names ?? SQLColumns(columnNames)
            names = columns
            return SQLRow(columns: columns, values: values)
        }

        /// Replaces each `?` placeholder with `$n`.
        static func numbered(_ sql: String) -> String {
            var output: [UInt8] = []
            output.reserveCapacity(sql.utf8.count + 16)
            var index = 0
            for byte in sql.utf8 {
                if byte == UInt8(ascii: "?") {
                    index += 1
                    output.append(UInt8(ascii: "$"))
                    output.append(contentsOf: String(index).utf8)
                } else {
                    output.append(byte)
                }
            }
            return String(decoding: output, as: UTF8.self)
        }

        static func value(_ cell: PostgresCell) throws -> SQLValue {
            guard cell.bytes != nil else { return .null }
            switch cell.dataType {
            case .int2, .int4, .int8, .oid: return .integer(try cell.decode(Int.self))
            case .float4, .float8, .numeric: return .float(try cell.decode(Double.self))
            case .bytea: return .blob(try cell.decode(ByteBuffer.self))
            case .bool: return .integer(try cell.decode(Bool.self) ? 1 : 0)
            default: return .text(try cell.decode(String.self))
            }
        }
    }
}
