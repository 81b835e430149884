import Crypto
import Foundation
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Synchronization
import Testing

@testable import APNs

/// Collects every log line (message and metadata) in memory.
final class CapturingLogHandler: LogHandler, Sendable {
    let lines: Mutex<[String]>
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }

    init() { self.lines = Mutex([]) }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        lines.withLock { $0.append("\(event.message) \(event.metadata ?? [:])") }
    }
}

@Suite struct APNsLoggingTests {
    @Test func neitherTokensNorKeysNorDeviceTokensAreLogged() async throws {
        let handler = CapturingLogHandler()
        let logger = Logger(label: "capture") { _ in handler }
        let device = APNsHarness.deviceToken(42)
        let unreachable = try APNsAdapter(
            configuration: APNsAdapterConfiguration(
                host: "127.0.0.1", port: 1, caCertificatePEM: APNsHarness.tls.caCertificatePEM, teamID: APNsHarness.teamID,
                keyID: APNsHarness.keyID, privateKeyPEM: APNsHarness.signingKey.pemRepresentation, topic: APNsHarness.topic),
            logger: logger)
        let delivery = Delivery(
            notificationID: "n", installationID: "i", platform: .apns, pushChannel: .handle(device), format: .apple,
            payload: ByteBuffer(string: #"{"aps":{"alert":"secret text"}}"#), headers: [:])
        _ = await unreachable.deliver([delivery])
        await unreachable.shutdown()

        try await APNsHarness.with(tokenMaximumAge: 1) { hub in
            let adapter = try APNsAdapter(
                configuration: APNsAdapterConfiguration(
                    host: "127.0.0.1", port: hub.emulator.port!, caCertificatePEM: APNsHarness.tls.caCertificatePEM,
                    teamID: APNsHarness.teamID, keyID: APNsHarness.keyID, privateKeyPEM: APNsHarness.signingKey.pemRepresentation,
                    topic: APNsHarness.topic),
                logger: logger)
            hub.emulator.expireProviderTokens(issuedAtOrBefore: Date().addingTimeInterval(3600))
            _ = await adapter.deliver([delivery])
            await adapter.shutdown()
        }
        let lines = handler.lines.withLock { $0 }
        #expect(!lines.isEmpty)
        let jwtPrefix = try APNsProviderToken(
            privateKeyPEM: APNsHarness.signingKey.pemRepresentation, teamID: APNsHarness.teamID, keyID: APNsHarness.keyID
        ).token().prefix(20)
        for line in lines {
            #expect(!line.contains(device), "\(line)")
            #expect(!line.contains(jwtPrefix), "\(line)")
            #expect(!line.contains("PRIVATE KEY"), "\(line)")
            #expect(!line.contains("secret text"), "\(line)")
        }
    }
}
