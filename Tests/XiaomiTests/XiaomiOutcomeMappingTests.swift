import Foundation
import NotificationHub
import Testing
import Xiaomi

@Suite struct XiaomiOutcomeMappingTests {
    static let ids = ["reg-a-0123456789abcdefgh", "reg-b-0123456789abcdefgh"]

    static func results(_ status: Int, _ body: String, retryAfter: String? = nil, now: Date = Date()) -> [DeliveryResult] {
        XiaomiOutcomeMapping.results(registrationIDs: ids, status: status, retryAfter: retryAfter, body: Array(body.utf8), now: now)
    }

    static func error(_ code: Int) -> String { #"{"result":"error","code":\#(code),"description":"x","reason":"y"}"# }

    @Test(arguments: [
        (20301, Outcome.expiredChannel),
        (21301, .invalidCredentials), (21302, .invalidCredentials), (22000, .invalidCredentials), (22006, .invalidCredentials),
        (22007, .invalidCredentials), (22022, .invalidCredentials), (10031, .invalidCredentials), (10036, .invalidCredentials),
        (10008, .invalidNotificationFormat), (10012, .invalidNotificationFormat), (10016, .invalidNotificationFormat),
        (10017, .invalidNotificationFormat), (21305, .invalidNotificationFormat), (65036, .invalidNotificationFormat),
        (65037, .invalidNotificationFormat), (65038, .invalidNotificationFormat),
        (65009, .invalidNotificationSize), (65014, .invalidNotificationSize), (65015, .invalidNotificationSize),
        (10027, .throttled), (10034, .throttled), (21303, .throttled),
        (1, .pnsUnavailable), (10001, .pnsUnavailable), (10002, .pnsUnavailable), (10003, .pnsUnavailable),
        (10037, .pnsUnavailable), (26003, .pnsUnavailable), (65029, .pnsUnavailable),
        (-1, .unknownError), (22102, .unknownError), (99999, .unknownError),
    ] as [(Int, Outcome)])
    func everyDocumentedCodeHasItsOutcome(code: Int, outcome: Outcome) {
        let results = Self.results(200, Self.error(code))
        #expect(results.map(\.outcome) == [outcome, outcome])
        #expect(results.allSatisfy { $0.reason == String(code) })
        #expect(XiaomiReason(rawValue: String(code)).rawValue == String(code))
    }

    @Test func successExpiresExactlyTheBadRegistrationIds() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let body = #"{"result":"ok","code":0,"data":{"id":"m1","bad_regids":"\#(Self.ids[1]), other"},"description":"成功"}"#
        #expect(Self.results(200, body, now: now) == [
            .success, DeliveryResult(.expiredChannel, reason: "bad_regids", channelExpiredAt: now),
        ])
        #expect(Self.results(200, #"{"result":"ok","code":0,"data":{"id":"m1"}}"#) == [.success, .success])
        #expect(Self.results(200, #"{"result":"ok","code":"0"}"#) == [.success, .success])
    }

    @Test func throttlingAndOutagesHonourRetryAfter() {
        #expect(Self.results(200, Self.error(10027), retryAfter: "4").first == DeliveryResult(.throttled, reason: "10027", retryAfter: .seconds(4)))
        #expect(Self.results(200, Self.error(10027)).first == DeliveryResult(.throttled, reason: "10027", retryAfter: XiaomiAdapter.throttleBackoff))
        #expect(Self.results(429, "").first == DeliveryResult(.throttled, reason: "HTTP429", retryAfter: XiaomiAdapter.throttleBackoff))
        #expect(Self.results(503, Self.error(10002), retryAfter: "Wed, 21 Oct 2099 07:28:00 GMT").first?.retryAfter != nil)
        #expect(Self.results(502, "<html/>").first == DeliveryResult(.pnsUnavailable, reason: "HTTP502"))
        #expect(Self.results(200, Self.error(10002), retryAfter: "1e300").first == DeliveryResult(.pnsUnavailable, reason: "10002"))
    }

    @Test func aPermanentHTTPRefusalIsNeverMadeRetryableByItsBody() {
        #expect(Self.results(400, Self.error(10002)).first == DeliveryResult(.unknownError, reason: "10002"))
        #expect(Self.results(404, Self.error(10027)).first == DeliveryResult(.unknownError, reason: "10027"))
        #expect(Self.results(400, Self.error(21301)).first?.outcome == .invalidCredentials)
    }

    @Test func answersNamingNoCodeFallBackOnTheStatus() {
        #expect(Self.results(401, "").first == DeliveryResult(.invalidCredentials, reason: "HTTP401"))
        #expect(Self.results(403, "nope").first?.outcome == .invalidCredentials)
        #expect(Self.results(413, "").first?.outcome == .invalidNotificationSize)
        #expect(Self.results(418, "").first == DeliveryResult(.unknownError, reason: "HTTP418"))
        #expect(Self.results(200, "not json").first == DeliveryResult(.unknownError, reason: "HTTP200"))
        #expect(Self.results(200, #"{"code":1e300}"#).first == DeliveryResult(.unknownError, reason: "HTTP200"))
        // A code of 0 on an answer that is not a 2xx is not a success.
        #expect(Self.results(500, #"{"code":0}"#).first?.outcome == .pnsUnavailable)
    }

    @Test func reasonsAreTypedWithAnUnknownEscape() {
        #expect(XiaomiReason(rawValue: "21301") == .authenticationFailed)
        #expect(XiaomiReason(rawValue: "22022") == .invalidPackageName)
        #expect(XiaomiReason(rawValue: "12345") == .unknown("12345"))
        #expect(XiaomiReason.badRegistrationID.rawValue == "bad_regids")
        #expect(XiaomiError(reason: .authenticationFailed)?.code == .credentialsRejected)
        #expect(XiaomiError(reason: .invalidPackageName)?.code == .packageNameRejected)
        #expect(XiaomiError(reason: .systemBusy) == nil)
    }
}
