import Foundation
import HMS
import NotificationHub
import Testing

@Suite struct HMSOutcomeMappingTests {
    static let tokens = ["a", "b", "c"]

    static func results(_ status: Int, _ body: String, retryAfter: String? = nil) -> [DeliveryResult] {
        HMSOutcomeMapping.results(tokens: tokens, status: status, retryAfter: retryAfter, body: Array(body.utf8))
    }

    @Test func aPartialSuccessExpiresOnlyTheListedTokens() {
        let msg = #"{\"success\":2,\"failure\":1,\"illegal_tokens\":[\"b\"]}"#
        let results = Self.results(200, #"{"code":"80100000","msg":"\#(msg)","requestId":"1"}"#)
        #expect(results.map(\.outcome) == [.success, .expiredChannel, .success])
        #expect(results[1].reason == "80100000")
    }

    @Test func theCauseKeyedSpellingOfIllegalTokensIsReadToo() {
        let msg = #"{\"illegalTokens\":{\"noRight\":[\"c\"]},\"failure\":1}"#
        let results = Self.results(200, #"{"code":"80100000","msg":"\#(msg)"}"#)
        #expect(results.map(\.outcome) == [.success, .success, .expiredChannel])
    }

    @Test(arguments: [
        (200, "80000000", Outcome.success),
        (400, "80300007", .expiredChannel),
        (400, "80100003", .invalidNotificationFormat),
        (400, "80300010", .invalidNotificationFormat),
        (400, "80300008", .invalidNotificationSize),
        (401, "80200001", .invalidCredentials),
        (401, "80200003", .invalidCredentials),
        (503, "80600003", .throttled),
        (500, "81000001", .pnsUnavailable),
        (200, "89999999", .unknownError),
    ] as [(Int, String, Outcome)])
    func everyDocumentedCodeHasItsOutcome(status: Int, code: String, outcome: Outcome) {
        let results = Self.results(status, #"{"code":"\#(code)","msg":"m"}"#)
        #expect(results.map(\.outcome) == [outcome, outcome, outcome])
    }

    @Test func answersWithoutACodeFallBackOnTheStatus() {
        #expect(Self.results(503, "<html>busy</html>", retryAfter: "4").first == DeliveryResult(.throttled, reason: "HTTP503", retryAfter: .seconds(4)))
        #expect(Self.results(502, "").first?.outcome == .pnsUnavailable)
        #expect(Self.results(401, "").first?.outcome == .invalidCredentials)
        #expect(Self.results(418, "").first == DeliveryResult(.unknownError, reason: "HTTP418"))
    }

    @Test func reasonsAreTypedWithAnUnknownEscape() {
        #expect(HMSReason(rawValue: "80300007") == .allTokensInvalid)
        #expect(HMSReason(rawValue: "80200003") == .oauthTokenExpired)
        #expect(HMSReason(rawValue: "80000009") == .unknown("80000009"))
        #expect(HMSReason.partialSuccess.rawValue == "80100000")
    }
}
