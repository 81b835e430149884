import FCM
import Foundation
import HubTestSupport
import Logging
import NotificationHub
import PushEmulator
import Synchronization
import Testing

@Suite struct FCMLoggingTests {
    @Test func secretsAndTokensNeverReachTheLogs() async throws {
        try await FCMHarness.with { hub in
            let capture = CapturedLogs()
            let logger = capture.logger("capture")
            let json = FCMHarness.serviceAccountJSON(port: hub.ports.service)
            let account = try FCMServiceAccount(json: json)
            let adapter = try FCMAdapter(
                serviceAccount: account,
                configuration: FCMAdapter.Configuration(
                    endpoint: "https://127.0.0.1:\(hub.ports.service)", caCertificatePEM: FCMHarness.tls.caCertificatePEM),
                logger: logger)
            let device = FCMHarness.token("secret-device")
            hub.emulator.unregister([device])
            _ = await hub.deliver(.fcmv1, #"{"message":{"data":{"a":"1"}}}"#, to: device, with: adapter, logger: logger)
            hub.emulator.revokeAccessTokens()
            _ = await hub.deliver(.fcmv1, #"{"message":{"data":{"a":"1"}}}"#, to: FCMHarness.token("b"), with: adapter, logger: logger)
            try await adapter.shutdown()
            // A rejected assertion is logged by its OAuth error only.
            let bad = try FCMAdapter(
                serviceAccount: try FCMServiceAccount(json: FCMHarness.serviceAccountJSON(port: hub.ports.service, projectID: "x", tokenURI: "https://127.0.0.1:\(hub.ports.service)/nope")),
                configuration: FCMAdapter.Configuration(
                    endpoint: "https://127.0.0.1:\(hub.ports.service)", caCertificatePEM: FCMHarness.tls.caCertificatePEM),
                logger: logger)
            _ = await hub.deliver(.fcmv1, #"{"message":{}}"#, to: device, with: bad, logger: logger)
            try await bad.shutdown()

            let lines = capture.entries
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
