import ADM
import Foundation
import NotificationHub
import Testing

@Suite struct ADMOutcomeMappingTests {
    static let id = "amzn1.adm-registration.v3.abc"

    static func result(_ status: Int, _ body: String, retryAfter: String? = nil, errorType: String? = nil) -> DeliveryResult {
        ADMOutcomeMapping.result(
            registrationID: id, status: status, retryAfter: retryAfter, errorType: errorType, body: Array(body.utf8))
    }

    @Test(arguments: [
        (400, "InvalidRegistrationId", Outcome.badChannel),
        (400, "Unregistered", .expiredChannel),
        (400, "InvalidData", .invalidNotificationFormat),
        (400, "InvalidConsolidationKey", .invalidNotificationFormat),
        (400, "InvalidExpiration", .invalidNotificationFormat),
        (400, "InvalidChecksum", .invalidNotificationFormat),
        (400, "InvalidType", .invalidNotificationFormat),
        (401, "AccessTokenExpired", .invalidCredentials),
        (413, "MessageTooLarge", .invalidNotificationSize),
        (429, "MaxRateExceeded", .throttled),
        (500, "InternalServerError", .pnsUnavailable),
        (503, "ServiceUnavailable", .pnsUnavailable),
        (400, "SomethingNew", .unknownError),
    ] as [(Int, String, Outcome)])
    func everyDocumentedReasonHasItsOutcome(status: Int, reason: String, outcome: Outcome) {
        let result = Self.result(status, #"{"reason":"\#(reason)"}"#)
        #expect(result.outcome == outcome)
        #expect(result.reason == reason)
        #expect(ADMReason(rawValue: reason).rawValue == reason)
    }

    @Test func anUnregisteredChannelCarriesWhenItExpired() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let result = ADMOutcomeMapping.result(
            registrationID: Self.id, status: 400, retryAfter: nil, errorType: nil, body: Array(#"{"reason":"Unregistered"}"#.utf8),
            now: now)
        #expect(result == DeliveryResult(.expiredChannel, reason: "Unregistered", channelExpiredAt: now))
    }

    @Test func successReportsANewRegistrationIdOnlyWhenItIsOne() {
        #expect(Self.result(200, #"{"registrationID":"\#(Self.id)"}"#) == .success)
        #expect(Self.result(200, #"{"registrationID":"amzn1.adm-registration.v3.new"}"#)
            == DeliveryResult(.success, canonicalPushChannel: "amzn1.adm-registration.v3.new"))
        #expect(Self.result(200, #"{"registrationID":"not an id"}"#) == .success)
        #expect(Self.result(200, "") == .success)
    }

    @Test func theErrorTypeHeaderNamesTheReasonWhenTheBodyDoesNot() {
        let header = "Unregistered:http://internal.amazon.com/coral/com.amazon.device.messaging/"
        #expect(Self.result(400, "", errorType: header).outcome == .expiredChannel)
        #expect(Self.result(400, "<html/>", errorType: "InvalidData:x").reason == "InvalidData")
    }

    @Test func answersNamingNoReasonFallBackOnTheStatus() {
        #expect(Self.result(429, "", retryAfter: "4") == DeliveryResult(.throttled, reason: "HTTP429", retryAfter: .seconds(4)))
        #expect(Self.result(429, "") == DeliveryResult(.throttled, reason: "HTTP429", retryAfter: ADMAdapter.throttleBackoff))
        #expect(Self.result(502, "").outcome == .pnsUnavailable)
        #expect(Self.result(503, "", retryAfter: "Wed, 21 Oct 2099 07:28:00 GMT").retryAfter != nil)
        #expect(Self.result(401, "").outcome == .invalidCredentials)
        #expect(Self.result(413, "").outcome == .invalidNotificationSize)
        #expect(Self.result(418, "") == DeliveryResult(.unknownError, reason: "HTTP418"))
    }

    @Test func reasonsAreTypedWithAnUnknownEscape() {
        #expect(ADMReason(rawValue: "MaxRateExceeded") == .maxRateExceeded)
        #expect(ADMReason(rawValue: "Unregistered") == .unregistered)
        #expect(ADMReason(rawValue: "Brand-new") == .unknown("Brand-new"))
        #expect(ADMReason.invalidChecksum.rawValue == "InvalidChecksum")
    }
}
