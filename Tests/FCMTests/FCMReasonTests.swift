import FCM
import Testing

@Suite struct FCMReasonTests {
    @Test(arguments: ["UNREGISTERED", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED", "THIRD_PARTY_AUTH_ERROR", "INTERNAL"])
    func knownCodesRoundTrip(name: String) {
        let reason = FCMReason(rawValue: name)
        #expect(reason != .unknown(name))
        #expect(reason.rawValue == name)
    }

    @Test func anUnlistedCodeIsKeptAsSpelled() {
        #expect(FCMReason(rawValue: "HTTP418") == .unknown("HTTP418"))
        #expect(FCMReason(rawValue: "unregistered") == .unknown("unregistered"))
    }
}
