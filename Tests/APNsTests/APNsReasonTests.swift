import APNs
import Logging
import NotificationHub
import Testing

@Suite struct APNsReasonTests {
    @Test(arguments: ["BadDeviceToken", "Unregistered", "TooManyProviderTokenUpdates", "BadCollapseId", "Shutdown"])
    func knownReasonsRoundTrip(name: String) {
        let reason = APNsReason(rawValue: name)
        #expect(reason != .unknown(name))
        #expect(reason.rawValue == name)
    }

    @Test func anUnlistedReasonIsKeptAsSpelled() {
        #expect(APNsReason(rawValue: "SomethingNew") == .unknown("SomethingNew"))
        #expect(APNsReason(rawValue: "SomethingNew").rawValue == "SomethingNew")
    }

    @Test func outcomesFollowTheTypedReason() {
        #expect(APNsOutcomeMapping.result(status: 400, reason: "BadDeviceToken").outcome == .badChannel)
        #expect(APNsOutcomeMapping.result(status: 400, reason: "DeviceTokenNotForTopic").outcome == .wrongChannel)
        #expect(APNsOutcomeMapping.result(status: 400, reason: "IdleTimeout").outcome == .pnsUnreachable)
        #expect(APNsOutcomeMapping.result(status: 400, reason: "SomethingNew").outcome == .invalidNotificationFormat)
    }

    @Test func anUnusableKeyIsAnAPNsError() {
        let settings = APNsSettings(host: "127.0.0.1", teamID: "T", keyID: "K", privateKeyPEM: "not a key", topic: "app")
        #expect(throws: APNsError(.invalidPrivateKey, "privateKey is not a PKCS#8 PEM P-256 key (an APNs .p8 file)")) {
            _ = try APNsAdapter(configuration: settings, logger: .init(label: "test"))
        }
    }
}
