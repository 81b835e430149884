import Foundation
import NotificationHub

/// What a PostgreSQL server spent on a stretch of the benchmark: the CPU of all its processes (read from `/proc`, so
/// only for a server on this machine), the statements it ran (`pg_stat_statements`, when the server preloads it, as
/// `Scripts/test-postgres.sh` does) and the transactions it committed (`pg_stat_database`).
struct PostgresServerCost {
    /// A reading of the server's counters.
    struct Sample {
        var cpuSeconds: Double?
        var statements: Int?
        var commits: Int
    }

    let database: any HubDatabase
    /// The postmaster's process id, when the server runs on this machine.
    let postmaster: pid_t?
    let hasStatementStatistics: Bool

    /// Connects with `storage` (a schema the benchmark already created).
    static func open(storage: StorageConfiguration) async throws -> PostgresServerCost {
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
    func serverCPUSeconds() -> Double? {
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

    func sample() async throws -> Sample {
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

    /// Prints the server's CPU, statements and commits per send between two samples, under `name`.
    func report(_ name: String, from before: Sample, to after: Sample, sends: Int) {
        let sends = Double(max(1, sends))
        if let start = before.cpuSeconds, let end = after.cpuSeconds {
            figure("\(name).serverCPUPerSend", 1e6 * (end - start) / sends, "µs", decimals: 1)
        } else {
            say("  \(name).serverCPUPerSend: the server's processes are not visible here")
        }
        if let start = before.statements, let end = after.statements {
            figure("\(name).statementsPerSend", Double(end - start) / sends, "statements", decimals: 2)
        } else {
            say("  \(name).statementsPerSend: pg_stat_statements is not loaded (shared_preload_libraries)")
        }
        figure("\(name).commitsPerSend", Double(after.commits - before.commits) / sends, "transactions", decimals: 2)
    }

    func close() async {
        try? await database.close()
    }
}
