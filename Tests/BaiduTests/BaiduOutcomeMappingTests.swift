import Baidu
import Foundation
import NotificationHub
import Testing

@Suite struct BaiduOutcomeMappingTests {
    static func result(_ status: Int, _ body: String, retryAfter: String? = nil) -> DeliveryResult {
        BaiduOutcomeMapping.result(status: status, retryAfter: retryAfter, body: Array(body.utf8))
    }

    @Test(arguments: [
        (404, 30608, Outcome.expiredChannel),
        (404, 30607, .expiredChannel),
        (404, 30605, .badChannel),
        (400, 30602, .invalidNotificationFormat),
        (401, 30603, .invalidCredentials),
        (403, 30606, .invalidCredentials),
        (402, 30604, .throttled),
        (429, 30699, .throttled),
        (500, 30600, .pnsUnavailable),
        (405, 30601, .unknownError),
        (400, 30609, .unknownError),
        (400, 31000, .unknownError),
    ] as [(Int, Int, Outcome)])
    func everyDocumentedCodeHasItsOutcome(status: Int, code: Int, outcome: Outcome) {
        let result = Self.result(status, #"{"request_id":123,"error_code":\#(code),"error_msg":"x"}"#)
        #expect(result.outcome == outcome)
        #expect(result.reason == String(code))
        #expect(BaiduReason(rawValue: String(code)).rawValue == String(code))
    }

    @Test func successIsA200WithoutAnErrorCode() {
        #expect(Self.result(200, #"{"request_id":1,"response_params":{"msg_id":"24234532453245","send_time":1427174155}}"#) == .success)
        #expect(Self.result(200, #"{"request_id":1,"error_code":30608,"error_msg":"Bind Relation Not Found"}"#).outcome == .expiredChannel)
    }

    @Test func theStatusDecidesWhereTheBodyNamesNoCode() {
        #expect(Self.result(503, "<html/>", retryAfter: "12") == DeliveryResult(.pnsUnavailable, reason: "HTTP503", retryAfter: .seconds(12)))
        #expect(Self.result(429, "") == DeliveryResult(.throttled, reason: "HTTP429", retryAfter: BaiduAdapter.throttleBackoff))
        #expect(Self.result(401, "").outcome == .invalidCredentials)
        #expect(Self.result(418, "").outcome == .unknownError)
        // A code given as text counts; an absurd one is no code.
        #expect(Self.result(404, #"{"error_code":"30608"}"#).outcome == .expiredChannel)
        #expect(Self.result(404, #"{"error_code":1e300}"#).reason == "HTTP404")
        #expect(Self.result(404, #"{"error_code":30608.5}"#).reason == "HTTP404")
    }

    @Test func anExpiredChannelCarriesWhenItExpired() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let result = BaiduOutcomeMapping.result(
            status: 404, retryAfter: nil, body: Array(#"{"error_code":30608}"#.utf8), now: now)
        #expect(result.channelExpiredAt == now)
    }

    @Test func absurdRetryAfterIsIgnoredOrClamped() {
        #expect(Self.result(429, #"{"error_code":30699}"#, retryAfter: "1e300").retryAfter == BaiduAdapter.throttleBackoff)
        #expect(Self.result(503, "", retryAfter: "-1").retryAfter == nil)
    }
}
