import FCM
import Foundation
import Logging
import NotificationHub
import PushEmulator
import Synchronization
import Testing

/// Captures every log line (message and metadata) at every level.
final class CapturingLogHandler: LogHandler, Sendable {
    let lines = Mutex<[String]>([])
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        lines.withLock { $0.append("\(event.message) \(event.metadata ?? [:])") }
    }
}

@Suite struct FCMLoggingTests {
    @Test func secretsAndTokensNeverReachTheLogs() async throws {
        try await FCMHarness.with { hub in
            let capture = CapturingLogHandler()
            let logger = Logger(label: "capture") { _ in capture }
            let json = FCMHarness.serviceAccountJSON(port: hub.ports.service)
            let account = try FCMServiceAccount(json: json)
            let adapter = try FCMAdapter(
                serviceAccount: account,
                configuration: FCMAdapter.Configuration(
                    endpoint: "https://127.0.0.1:\(hub.ports.service)", caCertificatePEM: FCMHarness.tls.caCertificatePEM),
                logger: logger)
            let device = FCMHarness.token("secret-device")
            hub.emulator.unregister([device])
            _ = await hub.deliver(.fcmv1, #"{"message":{"data":{"a":"1"}}}"#, to: device, with: adapter)
            hub.emulator.revokeAccessTokens()
            _ = await hub.deliver(.fcmv1, #"{"message":{"data":{"a":"1"}}}"#, to: FCMHarness.token("b"), with: adapter)
            try await adapter.shutdown()
            // A rejected assertion is logged by its OAuth error only.
            let bad = try FCMAdapter(
                serviceAccount: try FCMServiceAccount(json: FCMHarness.serviceAccountJSON(port: hub.ports.service, projectID: "x", tokenURI: "https://127.0.0.1:\(hub.ports.service)/nope")),
                configuration: FCMAdapter.Configuration(
                    endpoint: "https://127.0.0.1:\(hub.ports.service)", caCertificatePEM: FCMHarness.tls.caCertificatePEM),
                logger: logger)
            _ = await hub.deliver(.fcmv1, #"{"message":{}}"#, to: device, with: bad)
            try await bad.shutdown()

            let lines = capture.lines.withLock { $0 }
            #expect(!lines.isEmpty)
            for line in lines {
                #expect(!line.contains("ya29."), "access token in log: \(line)")
                #expect(!line.contains("PRIVATE KEY"), "private key in log: \(line)")
                #expect(!line.contains(device), "device token in log: \(line)")
                #expect(!line.contains("eyJ"), "assertion in log: \(line)")
            }
        }
    }
}
