import Crypto
import Foundation
import Logging
import NotificationHub
import PushEmulator
#if canImport(Glibc)
import Glibc
#endif

/// A `hub serve` process started from the `hub` executable built beside the tests, with its output in a file. It
/// runs at the lowest CPU priority so that it does not starve suites running beside it.
final class HubProcess: Sendable {
    let pid: pid_t
    let logPath: String

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
        let arguments = ["/bin/bash", "-c", "exec nice -n 19 \"$0\" serve -c \"$1\" >>\"$2\" 2>&1 </dev/null", Self.executable, configuration, logPath]
        var cArguments: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/bin/bash", nil, nil, &cArguments, environ) == 0 else {
            throw HubError(.invalidConfiguration, "could not start \(Self.executable)")
        }
        self.pid = pid
    }

    /// Kills the process with SIGKILL (no graceful shutdown) and reaps it.
    func kill9() {
        _ = Glibc.kill(pid, SIGKILL)
        reap()
    }

    /// Asks the process to shut down gracefully and reaps it.
    func terminate() {
        _ = Glibc.kill(pid, SIGTERM)
        reap()
    }

    private func reap() {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
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
            tls: tls, logger: Logger(label: "emulator"))
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
