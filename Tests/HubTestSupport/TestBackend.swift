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
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Scripts/test-postgres.sh").path
        let outputPath = NSTemporaryDirectory() + "hub-test-postgres-\(UUID().uuidString).url"
        let owner = String(ProcessInfo.processInfo.processIdentifier)
        // The script is run off the cooperative pool, with its output in a file rather than pipes.
        let status: Int32 = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let arguments = ["/bin/bash", "-c", "\"$0\" \"$1\" > \"$2\" 2>/dev/null", script, owner, outputPath]
                var cArguments: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
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
        try? FileManager.default.removeItem(atPath: outputPath)
        guard status == 0, text.hasPrefix("postgres://") else {
            throw HubError(
                .storageFailure,
                "could not start a test PostgreSQL server (exit \(status)); install postgresql or set HUB_TEST_POSTGRES_URL")
        }
        return text
    }
}
