import Foundation
import Logging
import PostgresNIO

/// What opening checks of the connections a pooler or a replica brings: that every address reaches the hub's schema
/// and database, so that a mistake in `storage.postgres` fails at start with a message that says what to change
/// instead of writing tables elsewhere or never waking a node. No message names a password.
extension PostgresHubDatabase {
    /// Throws unless `current_schema()` on `connection` is the hub's schema: behind a pooler the hub sends no
    /// `search_path`, so the connection must get it from the pooler's side (run inside the migrations' transaction,
    /// after the schema exists, so that an unset search path is found before a table is created in another schema).
    static func checkSchema(
        on connection: any SQLExecutor, settings: StorageConfiguration.PostgresSettings
    ) async throws {
        let rows = try await connection.query(
            "SELECT current_schema() AS schema, current_user AS role, current_database() AS database", [])
        let current = rows.first?.string("schema")
        guard current != settings.schema else { return }
        throw HubError(
            .invalidConfiguration,
            Self.schemaAdvice(
                found: "current_schema() is " + (current.map { "'\($0)'" } ?? "none (no schema of its search_path exists)"),
                key: "url", role: rows.first?.string("role"), database: rows.first?.string("database"),
                settings: settings))
    }

    /// What to do when the connections of `key` do not use the hub's schema.
    static func schemaAdvice(
        found: String, key: String, role: String?, database: String?, settings: StorageConfiguration.PostgresSettings
    ) -> String {
        let schema = settings.schema
        return """
            storage.postgres.\(key): the hub's schema is '\(schema)' but on its connections \(found). With \
            pooler: \(settings.pooler.rawValue) the hub sends no search_path (PgBouncer refuses that startup \
            parameter), so the pooler's side must set it: give this hub its own PgBouncer database entry with \
            connect_query='SET search_path = \(schema)', or set a default for the hub's role: ALTER ROLE \
            \(role ?? "<user>") IN DATABASE \(database ?? "<database>") SET search_path = \(schema)
            """
    }

    /// With `listenURL`: a notification sent through the main address arrives on the listening connection within
    /// ``openCheckLimit``, or opening fails (the listening connection reaches another database, or goes through a
    /// pooler in transaction mode, where a `LISTEN` ends with its transaction).
    func checkListener() async throws {
        guard let listener else { return }
        let channel = String(("hub_probe_" + settings.schema).prefix(63))
        let token = UUID().uuidString
        let logger = self.logger
        let limit = Self.openCheckLimit
        try await withTimeLimit(
            limit,
            timeout: HubError(
                .invalidConfiguration,
                "storage.postgres.listenURL: a notification sent through url did not arrive on listenURL within \(limit.components.seconds) s: listenURL must reach the same PostgreSQL database as url, directly (not through a pooler in transaction mode), and answer")
        ) {
            try await listener.withConnection { connection in
                try await connection.listen(on: channel) { notifications in
                    _ = try await self.read("SELECT pg_notify(?, ?)", [.text(channel), .text(token)])
                    for try await notification in notifications where notification.payload == token { return }
                    throw HubError(.invalidConfiguration, "storage.postgres.listenURL: the listening connection closed")
                }
            }
        }
        logger.debug("listening for work on listenURL", metadata: ["db.schema": "\(settings.schema)"])
    }

    /// With `readURL`: where the replica answers within ``PostgresAudienceReads/leaseLimit``, its connections must
    /// name the hub's schema first in their search path (read as text: the schema itself may not have reached the
    /// replica yet); a replica that does not answer is logged, and audience reads start on the primary.
    func checkReplica() async throws {
        guard let replica = audienceReads.replica else { return }
        let logger = self.logger
        let rows: [SQLRow]
        do {
            rows = try await withTimeLimit(
                audienceReads.leaseLimit, timeout: HubError(.storageFailure, "the replica gave no connection")
            ) {
                try await replica.withConnection { connection in
                    try await Executor(connection: connection, logger: logger).query(
                        """
                        SELECT current_setting('search_path') AS search_path, current_user AS role,
                            current_database() AS database, pg_is_in_recovery() AS standby
                        """, [])
                }
            }
        } catch {
            logger.warning(
                "the replica (storage.postgres.readURL) does not answer: audience reads use the primary until it does",
                metadata: ["error": "\(String(describing: error))"])
            return
        }
        let path = rows.first?.string("search_path") ?? ""
        let first = path.split(separator: ",").first.map {
            $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        if first != settings.schema {
            throw HubError(
                .invalidConfiguration,
                Self.schemaAdvice(
                    found: "the search_path is '\(path)'", key: "readURL", role: rows.first?.string("role"),
                    database: rows.first?.string("database"), settings: settings))
        }
        if rows.first?.int("standby") != 1 {
            logger.warning(
                "storage.postgres.readURL reaches a server that is not a standby (pg_is_in_recovery() is false): audience reads go there anyway")
        }
    }
}

extension PostgresHubDatabase {
    /// Runs a statement on the replica itself, never on the primary (diagnostics and tests: replay control, what the
    /// replica holds); throws where there is no replica.
    func readOnReplica(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        guard let replica = audienceReads.replica else { throw HubError(.storageFailure, "no replica is configured") }
        let logger = self.logger
        return try await replica.withConnection { connection in
            try await Executor(connection: connection, logger: logger).query(sql, binds)
        }
    }
}
