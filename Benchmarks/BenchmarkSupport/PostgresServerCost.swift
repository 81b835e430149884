import Foundation
import Logging
import NotificationHub

/// What a PostgreSQL server spent on a stretch of a benchmark: the CPU of all its processes (read from `/proc`, so
/// only for a server on this machine), the statements it ran (`pg_stat_statements`, when the server preloads it, as
/// `Scripts/test-postgres.sh` does) and the transactions it committed (`pg_stat_database`).
///
/// Take a ``sample()`` before and after the stretch; ``Sample/spent(since:)`` is the difference.
public struct PostgresServerCost: Sendable {
    /// A reading of the server's counters.
    public struct Sample: Sendable {
        /// User and system CPU seconds of the postmaster and its children; `nil` when they are not visible here.
        public var cpuSeconds: Double?
        /// Statements run (`pg_stat_statements` calls); `nil` without the extension.
        public var statements: Int?
        /// Transactions committed in the database.
        public var commits: Int

        /// What the server spent between `before` and this sample.
        public func spent(since before: Sample) -> Spent {
            Spent(
                cpuSeconds: cpuSeconds.flatMap { end in before.cpuSeconds.map { end - $0 } },
                statements: statements.flatMap { end in before.statements.map { end - $0 } },
                commits: commits - before.commits)
        }
    }

    /// What the server spent over a stretch: differences of two ``Sample``s.
    public struct Spent: Sendable {
        /// CPU seconds of all the server's processes; `nil` when they are not visible here.
        public var cpuSeconds: Double?
        /// Statements run; `nil` without `pg_stat_statements`.
        public var statements: Int?
        /// Transactions committed.
        public var commits: Int
    }

    let database: any HubDatabase
    /// The postmaster's process id, when the server runs on this machine.
    public let postmaster: pid_t?
    /// Whether `pg_stat_statements` can be read.
    public let hasStatementStatistics: Bool

    /// Connects with `storage` (a schema the benchmark already created).
    public static func open(storage: StorageConfiguration, logger: Logger) async throws -> PostgresServerCost {
        let database = try await HubDatabases.open(storage: storage, logger: logger)
        // A backend's parent is the postmaster; every server process is the postmaster or one of its children.
        var postmaster: pid_t?
        if let pid = try await database.read("SELECT pg_backend_pid() AS pid", []).first?.int("pid"),
            let parent = Self.parent(of: pid_t(pid))
        {
            postmaster = parent
        }
        var statistics = false
        if (try? await database.read("CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public", [])) != nil {
            statistics = (try? await database.read("SELECT COUNT(*) AS n FROM public.pg_stat_statements", [])) != nil
        }
        return PostgresServerCost(database: database, postmaster: postmaster, hasStatementStatistics: statistics)
    }

    /// The parent process id in `/proc/<pid>/stat`, or `nil` when the process is not visible here.
    static func parent(of pid: pid_t) -> pid_t? {
        guard let fields = statFields(pid), fields.count > 1 else { return nil }
        return pid_t(fields[1])
    }

    /// The fields of `/proc/<pid>/stat` after the command's closing parenthesis (the state is the first).
    static func statFields(_ pid: pid_t) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ")
    }

    /// CPU seconds of the postmaster (with its reaped children's) and of every live child.
    public func serverCPUSeconds() -> Double? {
        guard let postmaster, let fields = Self.statFields(postmaster), fields.count > 14 else { return nil }
        let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
        // utime, stime, cutime, cstime are the 12th to 15th fields after the command.
        var total = fields[11...14].compactMap { Double($0) }.reduce(0, +)
        let children = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in children {
            guard let pid = pid_t(entry), pid != postmaster, let child = Self.statFields(pid), child.count > 12,
                pid_t(child[1]) == postmaster
            else { continue }
            total += child[11...12].compactMap { Double($0) }.reduce(0, +)
        }
        return total / tick
    }

    /// Reads the counters, after letting the backends' commit counts reach the statistics views.
    public func sample() async throws -> Sample {
        // Commit counts reach the statistics views when a backend flushes them (at most once a second).
        _ = try? await database.read("SELECT pg_stat_force_next_flush()", [])
        try await Task.sleep(for: .milliseconds(1100))
        let commits =
            try await database.read(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()", []
            ).first?.int("xact_commit") ?? 0
        var statements: Int?
        if hasStatementStatistics {
            statements = try await database.read("SELECT SUM(calls)::int8 AS n FROM public.pg_stat_statements", [])
                .first?.int("n")
        }
        return Sample(cpuSeconds: serverCPUSeconds(), statements: statements, commits: commits)
    }

    /// Closes the connection.
    public func close() async {
        try? await database.close()
    }
}
