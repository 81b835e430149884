import NotificationHub
import Testing
import WebPush

@Suite struct WebPushReasonTests {
    @Test(arguments: [
        (404, "SubscriptionNotFound"), (410, "SubscriptionGone"), (413, "PayloadTooLarge"), (429, "TooManyRequests"),
        (400, "BadRequest"), (401, "VAPIDRejected"), (403, "VAPIDKeyMismatch"), (502, "Status502"),
    ])
    func everyStatusHasItsReason(status: Int, name: String) {
        #expect(WebPushReason(status: status).rawValue == name)
        #expect(WebPushOutcomeMapping.result(status: status).reason == name)
    }

    @Test func anUnnamedStatusIsUnknown() {
        #expect(WebPushReason(status: 418) == .unknown("Status418"))
        #expect(WebPushOutcomeMapping.result(status: 418).outcome == .unknownError)
    }
}
