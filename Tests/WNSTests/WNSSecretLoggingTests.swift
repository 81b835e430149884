import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Synchronization
import Testing
import WNS

@Suite struct WNSSecretLoggingTests {
    @Test func secretsTokensAndChannelsAreNeverLogged() async throws {
        let capture = CapturedLogs()
        let logger = capture.logger("wns")
        let emulator = WNSEmulator(
            settings: .init(packageSID: WNSHarness.packageSID, clientSecret: WNSHarness.clientSecret),
            tls: WNSHarness.tls, logger: logger)
        try await emulator.start()
        let channel = "secret-channel-id-123"
        let uri = emulator.createChannel(id: channel)
        func adapter(secret: String) throws -> WNSAdapter {
            WNSAdapter(
                configuration: WNSSettings(
                    packageSID: WNSHarness.packageSID, clientSecret: secret, tokenEndpoint: emulator.tokenEndpoint,
                    additionalTrustRoots: [try WNSHarness.tls.caCertificate()],
                    allowedChannelHosts: ["127.0.0.1:\(emulator.port)"]),
                logger: logger)
        }
        let good = try adapter(secret: WNSHarness.clientSecret)
        let bad = try adapter(secret: "the-wrong-secret")
        let delivery = Delivery(
            notificationID: "n", installationID: "i", platform: .wns, pushChannel: .handle(uri), format: .windows,
            payload: .init(string: Payloads.toast), headers: [:])
        #expect(await good.deliver([delivery], context: .standalone(logger: logger)) == [.success])
        emulator.expireAllTokens()
        #expect(await good.deliver([delivery], context: .standalone(logger: logger)) == [.success])
        let failed = await bad.deliver([delivery], context: .standalone(logger: logger))
        #expect(failed.map(\.outcome) == [.invalidCredentials])
        try await good.shutdown()
        try await bad.shutdown()
        await emulator.stop()

        let lines = capture.entries
        #expect(!lines.isEmpty)
        for line in lines {
            #expect(!line.contains(WNSHarness.clientSecret))
            #expect(!line.contains("the-wrong-secret"))
            #expect(!line.contains(channel))
            #expect(!line.contains("EgB"))  // the emulator's access tokens start with EgB
        }
        for result in failed { #expect(result.reason?.contains("the-wrong-secret") == false) }
    }
}
