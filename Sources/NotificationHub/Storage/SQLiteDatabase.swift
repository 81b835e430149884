import Foundation
import Logging
import NIOCore
import NIOPosix
import SQLiteNIO
import Synchronization

/// An SQLite database file opened for the hub: one writer connection whose transactions are serialised, and one
/// reader connection (WAL mode lets reads run beside writes). Schema migrations are applied on open.
///
/// Each connection runs its statements on a thread of its own, so that a write never waits for a thread behind a
/// long read (a fan-out's audience page) nor a read behind a write.
public final class SQLiteHubDatabase: HubDatabase {
    /// A versioned schema step.
    public struct Migration: Sendable {
        /// The version the database has after this step.
        public var version: Int
        /// The statements of the step, run in one transaction.
        public var statements: [String]

        /// Creates a step.
        public init(version: Int, statements: [String]) {
            self.version = version
            self.statements = statements
        }
    }

    let writer: SQLiteConnection
    let reader: SQLiteConnection
    /// The connections' threads.
    private let threads: [NIOThreadPool]
    private let closed = Atomic(false)
    let writeLock = AsyncSerialLock()
    let logger: Logger
    public let condition = StoreCondition()
    /// Only this process opens the file: its nodes are kept here.
    public let processNodes: ProcessNodeRegistry? = ProcessNodeRegistry()
    /// The workers of this process listening for work (several hubs' workers may share one database in tests).
    private let listeners = Mutex<[UInt64: @Sendable (String) -> Void]>([:])
    private let nextListener = Atomic<UInt64>(0)

    private init(writer: SQLiteConnection, reader: SQLiteConnection, threads: [NIOThreadPool], logger: Logger) {
        self.writer = writer
        self.reader = reader
        self.threads = threads
        self.logger = logger
    }

    /// Opens a connection whose statements run on a thread of its own (appended to `threads`).
    private static func connect(
        _ storage: SQLiteConnection.Storage, threads: inout [NIOThreadPool], logger: Logger
    ) async throws -> SQLiteConnection {
        let thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        threads.append(thread)
        return try await SQLiteConnection.open(
            storage: storage, threadPool: thread, logger: logger, on: MultiThreadedEventLoopGroup.singleton.any())
    }

    /// Opens (creating if needed) a database and applies `migrations` that are newer than its version.
    public static func open(
        storage: StorageConfiguration, migrations: [Migration], logger: Logger
    ) async throws -> SQLiteHubDatabase {
        var threads: [NIOThreadPool] = []
        var connections: [SQLiteConnection] = []
        do {
            switch storage {
            case .postgres:
                throw HubError(.invalidConfiguration, "a PostgreSQL storage cannot be opened as SQLite")
            case .memory:
                connections = [try await connect(.memory, threads: &threads, logger: logger)]
            case .sqlite(let path):
                let directory = (path as NSString).deletingLastPathComponent
                if !directory.isEmpty {
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                }
                let writer = try await connect(.file(path: path), threads: &threads, logger: logger)
                connections = [writer]
                _ = try await writer.query("PRAGMA journal_mode=WAL", [])
                connections.append(try await connect(.file(path: path), threads: &threads, logger: logger))
            }
            for connection in connections {
                _ = try await connection.query("PRAGMA synchronous=NORMAL", [])
                _ = try await connection.query("PRAGMA foreign_keys=ON", [])
                _ = try await connection.query("PRAGMA busy_timeout=5000", [])
            }
            let database = SQLiteHubDatabase(
                writer: connections[0], reader: connections[connections.count - 1], threads: threads, logger: logger)
            try await database.migrate(migrations)
            // What opening and migrating cached (pages of the schema and of the tables it read) is given back: a node
            // serving many hubs would otherwise keep it for every hub that then stays idle.
            for connection in connections { _ = try await connection.query("PRAGMA shrink_memory", []) }
            return database
        } catch {
            for connection in connections { try? await connection.close() }
            for thread in threads { try? await thread.shutdownGracefully() }
            throw error
        }
    }

    private func migrate(_ migrations: [Migration]) async throws {
        try await transaction { connection in
            let rows = try await connection.query("PRAGMA user_version", [])
            let current = rows.first?.int("user_version") ?? 0
            for migration in migrations.sorted(by: { $0.version < $1.version }) where migration.version > current {
                for statement in migration.statements {
                    _ = try await connection.query(statement, [])
                }
                _ = try await connection.query("PRAGMA user_version = \(migration.version)", [])
                self.logger.info("applied schema migration", metadata: ["db.version": "\(migration.version)"])
            }
        }
    }

    public var dialect: SQLDialect { .sqlite }

    /// Runs `body` in a write transaction (`BEGIN IMMEDIATE`), committing on success and rolling back on error. A
    /// write refused for want of space (`SQLITE_FULL`) throws ``HubError/Code/storeFull``.
    public func transaction<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        try await condition.write { try await writeLock.withLock {
            try await control("BEGIN IMMEDIATE")
            do {
                let result = try await body(Executor(connection: writer))
                try await control("COMMIT")
                return result
            } catch {
                try? await control("ROLLBACK")
                throw error
            }
        } }
    }

    /// Runs a transaction-control statement to completion even when the calling task is cancelled: a cancelled
    /// task must still end the transaction it began, or the connection stays inside it.
    private func control(_ statement: String) async throws {
        try await writer.query(statement, [], logger: logger) { _ in }.get()
    }

    /// Runs a read-only query on the reader connection.
    public func read(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await Executor(connection: reader).query(sql, binds)
    }

    /// Runs statements on one connection, converting values.
    struct Executor: SQLExecutor {
        let connection: SQLiteConnection

        func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
            let rows = try await connection.query(sql, binds.map(Self.sqlite))
            guard let first = rows.first else { return [] }
            let names = SQLColumns(first.columns.map(\.name))
            return rows.map { row in SQLRow(columns: names, values: row.columns.map { Self.value($0.data) }) }
        }

        static func sqlite(_ value: SQLValue) -> SQLiteData {
            switch value {
            case .null: .null
            case .integer(let value): .integer(value)
            case .float(let value): .float(value)
            case .text(let value): .text(value)
            case .blob(let value): .blob(value)
            }
        }

        static func value(_ data: SQLiteData) -> SQLValue {
            switch data {
            case .null: .null
            case .integer(let value): .integer(value)
            case .float(let value): .float(value)
            case .text(let value): .text(value)
            case .blob(let value): .blob(value)
            }
        }
    }

    /// Wakes the listeners of this process: only they can share the file. They are woken inside the transaction;
    /// their claims wait for the single writer, so they see what it committed.
    public func notifyWork(from sender: String, on connection: any SQLExecutor) async throws {
        for wake in listeners.withLock({ Array($0.values) }) { wake(sender) }
    }

    /// Listens for work announced in this process until the task is cancelled.
    public func listenForWork(_ wake: @escaping @Sendable (_ sender: String) -> Void) async throws {
        let id = nextListener.add(1, ordering: .relaxed).newValue
        listeners.withLock { $0[id] = wake }
        defer { _ = listeners.withLock { $0.removeValue(forKey: id) } }
        wake("")
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3600))
        }
    }

    /// Closes both connections and their threads, once. Works from a cancelled task too (shutdown paths are often
    /// cancelled).
    public func close() async throws {
        // Closing twice (the hub that ran on it, then its opener) closes once.
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        try await writer.close().get()
        if reader !== writer { try await reader.close().get() }
        for thread in threads { try await thread.shutdownGracefully() }
    }
}
