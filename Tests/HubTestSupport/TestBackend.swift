import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import NotificationHub
import Testing

/// The databases the behavioural suites run on. Every store test runs once per backend.
///
/// PostgreSQL comes from `HUB_TEST_POSTGRES_URL` when set; otherwise the suite starts a throwaway cluster with
/// `Scripts/test-postgres.sh` (which needs the PostgreSQL server binaries) and stops it when the tests exit.
public enum TestBackend: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite
    case postgres

    /// Every backend, for `@Test(arguments:)`.
    public static let all = allCases

    public var testDescription: String { rawValue }

    /// The backend the current test runs on.
    @TaskLocal public static var current: TestBackend = .sqlite

    /// Runs `body` with this backend as ``current``.
    public func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await Self.$current.withValue(self, operation: body)
    }

    /// Opens a fresh, empty, migrated database on the current backend (PostgreSQL: a new schema).
    public static func openDatabase(logger: Logger = Logger.forTest("test")) async throws -> any HubDatabase {
        switch current {
        case .sqlite:
            return try await HubDatabases.open(storage: .memory, logger: logger)
        case .postgres:
            let url = try await TestPostgres.shared.url()
            let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
            return try await HubDatabases.open(
                storage: .postgres(try .init(url: url, schema: String(schema), maximumConnections: 4)), logger: logger)
        }
    }
}

/// The PostgreSQL server the tests use, started at most once per test process.
public actor TestPostgres {
    public static let shared = TestPostgres()
    private var starting: Task<String, any Error>?

    /// The server's URL; the first caller starts the server and the others wait for it.
    public func url() async throws -> String {
        if let starting { return try await starting.value }
        let task = Task { try await Self.start() }
        starting = task
        return try await task.value
    }

    private static func start() async throws -> String {
        if let configured = ProcessInfo.processInfo.environment["HUB_TEST_POSTGRES_URL"], !configured.isEmpty {
            return configured
        }
        return try await TestScripts.run(
            "test-postgres.sh", [],
            orExplain: "could not start a test PostgreSQL server; install postgresql or set HUB_TEST_POSTGRES_URL")
    }
}

/// PgBouncer in front of the test server (`Scripts/test-pgbouncer.sh`), one per call: each hub schema behind it
/// needs its own database entry (`connect_query` sets the schema), as it does in production.
public enum TestPooler {
    /// How PgBouncer lends server connections.
    public enum Mode: String, Sendable {
        case transaction, session
    }

    /// Starts PgBouncer in `mode` in front of the test server (`default_pool_size` `poolSize`) and returns the URL
    /// of its database entry, which sets `schema` on every server connection (none when `nil`). It stops when the
    /// test process exits.
    public static func start(mode: Mode = .transaction, schema: String?, poolSize: Int = 2) async throws -> String {
        let server = try await TestPostgres.shared.url()
        var arguments = [server, "--mode", mode.rawValue, "--pool-size", String(poolSize)]
        if let schema { arguments += ["--schema", schema] }
        return try await TestScripts.run(
            "test-pgbouncer.sh", arguments, orExplain: "could not start PgBouncer; install pgbouncer")
    }
}

/// A streaming replica of the test server (`Scripts/test-replica.sh`), started at most once per test process.
public actor TestReplica {
    public static let shared = TestReplica()
    private var starting: Task<String, any Error>?

    /// The replica's URL; the first caller starts it and the others wait for it.
    public func url() async throws -> String {
        if let starting { return try await starting.value }
        let task = Task {
            let primary = try await TestPostgres.shared.url()
            return try await TestScripts.run(
                "test-replica.sh", [primary], orExplain: "could not start a streaming replica of the test server")
        }
        starting = task
        return try await task.value
    }
}

/// Runs the scripts of `Scripts/` that start servers for the tests.
enum TestScripts {
    /// Runs `Scripts/<name>` with the test process's id and `arguments`, and returns the URL it prints.
    static func run(_ name: String, _ arguments: [String], orExplain failure: String) async throws -> String {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Scripts/\(name)").path
        let outputPath = NSTemporaryDirectory() + "hub-test-\(UUID().uuidString).url"
        let owner = String(ProcessInfo.processInfo.processIdentifier)
        // The script is run off the cooperative pool, with its output in a file rather than pipes.
        let status: Int32 = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let command = ["/bin/bash", "-c", TestChildren.closeInheritedFiles + "out=\"$1\"; shift; \"$@\" > \"$out\" 2> \"$out.err\"", "run", outputPath, script, owner]
                var cArguments: [UnsafeMutablePointer<CChar>?] = (command + arguments).map { strdup($0) } + [nil]
                defer { for argument in cArguments { free(argument) } }
                var pid: pid_t = 0
                guard posix_spawn(&pid, "/bin/bash", nil, nil, &cArguments, environ) == 0 else {
                    continuation.resume(returning: -1)
                    return
                }
                var status: Int32 = 0
                while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
                continuation.resume(returning: (status >> 8) & 0xff)
            }
        }
        let text = ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let errors = ((try? String(contentsOfFile: outputPath + ".err", encoding: .utf8)) ?? "").suffix(2000)
        try? FileManager.default.removeItem(atPath: outputPath)
        try? FileManager.default.removeItem(atPath: outputPath + ".err")
        guard status == 0, text.hasPrefix("postgres://") else {
            throw HubError(.storageFailure, "\(failure) (Scripts/\(name) exited with \(status)): \(errors)")
        }
        return text
    }
}
