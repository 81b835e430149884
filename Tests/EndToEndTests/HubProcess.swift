import Crypto
import Foundation
import HubTestSupport
import Logging
import NotificationHub
import PushEmulator
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A `hub serve` process started from the `hub` executable built beside the tests, with its output in a file. It
/// runs at the lowest CPU priority so that it does not starve suites running beside it.
///
/// Waiting for it never blocks a thread of the cooperative pool: the exit is polled, and a process that does not
/// stop within its grace period is killed, so a hub that fails to shut down fails its test instead of hanging the run.
final class HubProcess: Sendable {
    let pid: pid_t
    let logPath: String
    /// Set once the process has been reaped, so that its pid is never signalled again (it may belong to another).
    private let reaped = Mutex(false)

    /// The `hub` executable next to the test bundle.
    static var executable: String {
        let testBinary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: testBinary).deletingLastPathComponent().appendingPathComponent("hub").path
    }

    /// Starts `hub serve -c configuration`.
    init(configuration: String, logPath: String) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw HubError(.invalidConfiguration, "the hub executable is not built at \(Self.executable)")
        }
        self.logPath = logPath
        let arguments = ["/bin/bash", "-c", TestChildren.closeInheritedFiles + "exec nice -n 19 \"$0\" serve -c \"$1\" >>\"$2\" 2>&1 </dev/null", Self.executable, configuration, logPath]
        var cArguments: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/bin/bash", nil, nil, &cArguments, environ) == 0 else {
            throw HubError(.invalidConfiguration, "could not start \(Self.executable)")
        }
        self.pid = pid
    }

    /// Kills the process with SIGKILL (no graceful shutdown) and reaps it.
    func kill9() async {
        signal(SIGKILL)
        _ = await exitStatus(within: .seconds(30))
    }

    /// Asks the process to shut down gracefully; kills it when it has not exited after `grace`. Returns whether it
    /// exited by itself with status 0.
    @discardableResult
    func terminate(grace: Duration = .seconds(60)) async -> Bool {
        signal(SIGTERM)
        if let status = await exitStatus(within: grace) { return status == 0 }
        signal(SIGKILL)
        _ = await exitStatus(within: .seconds(30))
        return false
    }

    /// For cleanup paths: kills the process if it is still running and reaps it, waiting at most a few seconds.
    func killIfRunning() {
        signal(SIGKILL)
        for _ in 0..<300 where !poll() { usleep(10_000) }
    }

    /// Whether the process still runs.
    var isRunning: Bool { pollStatus() == nil }

    /// The port the hub listens on, from its "hub is listening" log line (waiting up to a minute for it).
    func port() async throws -> Int {
        for _ in 0..<1200 {
            let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.contains("hub is listening") }),
                let range = line.range(of: "server.address="),
                let port = line[range.upperBound...].split(separator: " ").first?.split(separator: ":").last.flatMap({ Int($0) })
            {
                return port
            }
            guard isRunning else { throw HubError(.invalidConfiguration, "the hub exited:\n\(logTail())") }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw HubError(.invalidConfiguration, "the hub did not start listening:\n\(logTail())")
    }

    /// The last `lines` lines of the process's log, for failure messages.
    func logTail(lines: Int = 30) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    private func signal(_ signal: Int32) {
        reaped.withLock { done in
            if !done { _ = Glibc.kill(pid, signal) }
        }
    }

    /// The exit status once the process has exited (-1 when it was killed by a signal), or nil after `timeout`.
    private func exitStatus(within timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let status = pollStatus() { return status }
            if ContinuousClock.now >= deadline { return nil }
            do { try await Task.sleep(for: .milliseconds(50)) } catch { usleep(50_000) }
        }
    }

    private func poll() -> Bool { pollStatus() != nil }

    /// Reaps the process without blocking; its exit code, -1 for a signal, or nil while it runs.
    private func pollStatus() -> Int32? {
        reaped.withLock { done -> Int32? in
            if done { return 0 }
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == 0 || (result == -1 && errno == EINTR) { return nil }
            done = true
            if result == -1 { return 0 }  // reaped elsewhere
            return status & 0x7f == 0 ? (status >> 8) & 0xff : -1
        }
    }
}

/// An APNs emulator in the test process, with the files a hub.yaml needs to reach it.
struct EmulatedAPNs {
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let topic = "com.example.app"

    let emulator: APNsEmulator
    let port: Int
    let directory: String

    static func start(directory: String) async throws -> EmulatedAPNs {
        let tls = try EmulatorTLS.generate()
        try tls.write(to: directory)
        let key = P256.Signing.PrivateKey()
        try key.pemRepresentation.write(toFile: directory + "/apns-key.p8", atomically: true, encoding: .utf8)
        let emulator = APNsEmulator(
            configuration: APNsEmulatorConfiguration(
                port: 0, teamID: teamID, keyID: keyID, publicKey: key.publicKey, topics: [topic],
                initialConcurrentStreams: 1, maximumConcurrentStreams: 1000, tokenMaximumAge: 3600,
                tokenMinimumRefreshInterval: 0, clock: SystemWallClock()),
            tls: tls, logger: Logger.forTest("emulator"))
        let port = try await emulator.start()
        return EmulatedAPNs(emulator: emulator, port: port, directory: directory)
    }

    /// The hub's `adapters:` entry for this emulator.
    var adapterYAML: String {
        """
              - type: apns
                endpoint: https://127.0.0.1:\(port)
                caCertificate: \(directory)/emulator-ca.pem
                teamId: \(Self.teamID)
                keyId: \(Self.keyID)
                privateKey: {file: \(directory)/apns-key.p8}
                topic: \(Self.topic)
        """
    }

    /// A distinct 32-byte device token per index.
    static func deviceToken(_ index: Int) -> String {
        String(format: "%08x", index) + String(repeating: "cd", count: 28)
    }
}

/// Polls `condition` until it holds or `timeout` passes.
func waitUntil(timeout: Duration, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// What hub logs say may have repeated a delivery on the wire besides a crash: a fan-out stopped by a lost lease
/// resumes from its last checkpoint (repeating at most the pages in flight), and a retried delivery may have reached
/// the platform before its attempt failed (a timeout on a loaded machine).
struct RepeatSources: CustomStringConvertible {
    var stops = 0
    var retries = 0

    init(logs paths: [String]) {
        stops = HubLogs.lines(in: paths).filter { $0.contains("fan-out stopped") }.count
        retries = HubLogs.sum("delivery.retries", in: paths)
    }

    var description: String { "stops=\(stops) retries=\(retries)" }
}

/// Reading what hub processes logged.
enum HubLogs {
    /// Every line of the logs.
    static func lines(in paths: [String]) -> [Substring] {
        paths.flatMap { ((try? String(contentsOfFile: $0, encoding: .utf8)) ?? "").split(separator: "\n") }
    }

    /// The sum of a numeric metadata value (`key=<n>`) over every line that has it.
    static func sum(_ key: String, in paths: [String]) -> Int {
        lines(in: paths).reduce(0) { total, line in
            guard let range = line.range(of: key + "=") else { return total }
            return total + (Int(line[range.upperBound...].prefix { $0.isNumber }) ?? 0)
        }
    }
}
