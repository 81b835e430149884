import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO

/// A PostgreSQL database shared by several hub nodes: a connection pool (postgres-nio's `PostgresClient`) whose
/// connections use the hub's own schema. Migrations run on open under an advisory lock, so nodes that start at the
/// same time apply each step once.
public final class PostgresHubDatabase: HubDatabase {
    let client: PostgresClient
    /// A small pool of its own for the node's upkeep: the connection listening for work, heartbeats and lease
    /// renewals never wait behind the fan-outs for a connection.
    let upkeep: PostgresClient
    let settings: StorageConfiguration.PostgresSettings
    let logger: Logger
    public let condition = StoreCondition()
    /// Concurrent audience reads of one-tag sends, combined into one statement.
    let addressPages: PostgresAddressPages
    private let running: Task<Void, Never>

    public var dialect: SQLDialect { .postgres }

    private init(
        client: PostgresClient, upkeep: PostgresClient, settings: StorageConfiguration.PostgresSettings, logger: Logger,
        started: AsyncStream<Void>.Continuation
    ) {
        self.client = client
        self.upkeep = upkeep
        self.settings = settings
        self.logger = logger
        addressPages = PostgresAddressPages(client: client, logger: logger)
        // The pools need their run loops for as long as the database is open; `close()` ends them. Each loop says
        // when it starts, so that the first lease (the migrations) comes after it.
        running = Task {
            await withDiscardingTaskGroup { group in
                for pool in [client, upkeep] {
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

    /// Connects, creates the hub's schema if needed and applies migrations newer than its version.
    public static func open(
        settings: StorageConfiguration.PostgresSettings, migrations: [SQLiteHubDatabase.Migration] = postgresSchema,
        logger: Logger
    ) async throws -> PostgresHubDatabase {
        var configuration = PostgresClient.Configuration(
            host: settings.host, port: settings.port, username: settings.username, password: settings.password,
            database: settings.database,
            tls: settings.requireTLS ? .require(try .clientDefault) : .disable)
        configuration.options.maximumConnections = settings.maximumConnections
        configuration.options.additionalStartupParameters = [("search_path", settings.schema)]
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        var upkeepConfiguration = configuration
        upkeepConfiguration.options.maximumConnections = upkeepConnections
        let upkeep = PostgresClient(configuration: upkeepConfiguration, backgroundLogger: logger)
        let (started, starting) = AsyncStream<Void>.makeStream()
        let database = PostgresHubDatabase(
            client: client, upkeep: upkeep, settings: settings, logger: logger, started: starting)
        for await _ in started.prefix(2) {}
        do {
            try await database.migrate(migrations)
        } catch {
            try? await database.close()
            throw error
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

    /// A prepared statement on each connection: parsed and planned once per connection. Concurrent reads are
    /// combined into one statement (``PostgresAddressPages``).
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

    /// Runs a prepared statement on a connection of the pool, outside a transaction (it commits by itself).
    private func run<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [SQLRow]
    where Statement.Row == PostgresRow {
        try await client.withConnection { connection in
            var rows: [SQLRow] = []
            var names: SQLColumns?
            for try await row in try await connection.execute(statement, logger: logger) {
                rows.append(try Executor.row(row, names: &names))
            }
            return rows
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

    public func listenForWork(_ wake: @escaping @Sendable (_ sender: String) -> Void) async throws {
        let channel = workChannel
        try await upkeep.withConnection { connection in
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
