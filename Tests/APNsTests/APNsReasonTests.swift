import Logging
import NotificationHub
import Testing

@testable import APNs

@Suite struct APNsReasonTests {
    @Test(arguments: [
        "BadDeviceToken", "Unregistered", "TooManyProviderTokenUpdates", "BadCollapseId", "Shutdown", "UnrelatedKeyIdInToken",
        "BadEnvironmentKeyIdInToken", "BadEnvironmentKeyInToken",
    ])
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

    @Test func theKeyReasonsAreTyped() {
        #expect(APNsReason(rawValue: "UnrelatedKeyIdInToken") == .unrelatedKeyIDInToken)
        #expect(APNsReason(rawValue: "BadEnvironmentKeyIdInToken") == .badEnvironmentKeyIDInToken)
        #expect(APNsReason(rawValue: "BadEnvironmentKeyInToken") == .badEnvironmentKeyInToken)
        #expect(APNsReason.badEnvironmentKeyIDInToken.isWrongEnvironmentKey && APNsReason.badEnvironmentKeyInToken.isWrongEnvironmentKey)
        #expect(!APNsReason.unrelatedKeyIDInToken.isWrongEnvironmentKey && APNsReason.unrelatedKeyIDInToken.isAboutTheKey)
        #expect(!APNsReason.invalidProviderToken.isAboutTheKey && !APNsReason.badDeviceToken.isAboutTheKey)
    }

    /// With the key a request was signed with, a 403 about the key names it (environment and key id) and says what
    /// to change; other reasons keep APNs' word alone.
    @Test func keyReasonsNameTheKeyToFix() {
        let sandbox = APNsOutcomeMapping.KeyInUse(environment: .sandbox, keyID: "SANDKEY123")
        let wrong = APNsOutcomeMapping.result(status: 403, reason: "BadEnvironmentKeyIdInToken", key: sandbox)
        #expect(wrong.outcome == .invalidCredentials)
        #expect(
            wrong.reason
                == "BadEnvironmentKeyIdInToken: APNs refused the sandbox key SANDKEY123: the key is restricted to the other environment. Enable key SANDKEY123 for sandbox in Certificates, Identifiers & Profiles > Keys, or give a key for sandbox as keys.sandbox")
        let unrelated = APNsOutcomeMapping.result(status: 403, reason: "UnrelatedKeyIdInToken", key: sandbox)
        #expect(unrelated.outcome == .invalidCredentials)
        #expect(unrelated.reason?.hasPrefix("UnrelatedKeyIdInToken: APNs refused the sandbox key SANDKEY123: it is not related") == true)
        let unnamed = APNsOutcomeMapping.result(
            status: 403, reason: "BadEnvironmentKeyInToken", key: .init(environment: nil, keyID: "KEY1234567"))
        #expect(unnamed.reason?.hasPrefix("BadEnvironmentKeyInToken: APNs refused key KEY1234567") == true)
        #expect(unnamed.reason?.contains("this endpoint's environment") == true)
        #expect(APNsOutcomeMapping.result(status: 403, reason: "InvalidProviderToken", key: sandbox).reason == "InvalidProviderToken")
        #expect(APNsOutcomeMapping.result(status: 400, reason: "BadDeviceToken", key: sandbox).reason == "BadDeviceToken")
    }

    @Test func answersThatSendADeviceToTheOtherEnvironment() {
        func answer(_ status: Int, _ reason: String?) -> Bool {
            APNsAdapter.isOtherEnvironmentAnswer(APNsResponse(status: status, reason: reason))
        }
        #expect(answer(400, "BadDeviceToken") && answer(403, "BadEnvironmentKeyIdInToken") && answer(403, "BadEnvironmentKeyInToken"))
        #expect(!answer(410, "Unregistered") && !answer(400, "DeviceTokenNotForTopic") && !answer(403, "UnrelatedKeyIdInToken"))
        #expect(!answer(403, "InvalidProviderToken") && !answer(200, nil) && !answer(0, nil) && !answer(500, "BadDeviceToken"))
    }

    @Test func anUnusableKeyIsAnAPNsError() {
        let settings = APNsSettings(host: "127.0.0.1", teamID: "T", keyID: "K", privateKeyPEM: "not a key", topic: "app")
        #expect(throws: APNsError(.invalidPrivateKey, "privateKey is not a PKCS#8 PEM P-256 key (an APNs .p8 file)")) {
            _ = try APNsAdapter(configuration: settings, logger: .init(label: "test"))
        }
    }
}
