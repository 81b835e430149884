import Crypto
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Synchronization
import Testing

@testable import APNs

@Suite struct APNsLoggingTests {
    @Test func neitherTokensNorKeysNorDeviceTokensAreLogged() async throws {
        let handler = CapturedLogs()
        let logger = handler.logger("capture")
        let device = APNsHarness.deviceToken(42)
        let unreachable = try APNsAdapter(
            configuration: APNsSettings(
                host: "127.0.0.1", port: 1, caCertificatePEM: APNsHarness.tls.caCertificatePEM, teamID: APNsHarness.teamID,
                keyID: APNsHarness.keyID, privateKeyPEM: APNsHarness.signingKey.pemRepresentation, topic: APNsHarness.topic),
            logger: logger)
        let delivery = Delivery(
            notificationID: "n", installationID: "i", platform: .apns, pushChannel: .handle(device), format: .apple,
            payload: ByteBuffer(string: #"{"aps":{"alert":"secret text"}}"#), headers: [:])
        _ = await unreachable.deliver([delivery], context: .standalone(logger: logger))
        await unreachable.shutdown()

        try await APNsHarness.with(tokenMaximumAge: 1) { hub in
            let adapter = try APNsAdapter(
                configuration: APNsSettings(
                    host: "127.0.0.1", port: hub.emulator.port!, caCertificatePEM: APNsHarness.tls.caCertificatePEM,
                    teamID: APNsHarness.teamID, keyID: APNsHarness.keyID, privateKeyPEM: APNsHarness.signingKey.pemRepresentation,
                    topic: APNsHarness.topic),
                logger: logger)
            hub.emulator.expireProviderTokens(issuedAtOrBefore: Date().addingTimeInterval(3600))
            _ = await adapter.deliver([delivery], context: .standalone(logger: logger))
            await adapter.shutdown()
        }
        let lines = handler.entries
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
