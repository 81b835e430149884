import AdapterKit
import Foundation
import NotificationHub
import Testing

@testable import WebPush

/// Numbers around a Web Push request are read with checked conversions: an absurd `Retry-After` or expiry is
/// clamped or ignored, never a crash.
@Suite struct WebPushAnswerParsingTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    @Test(arguments: [
        ("1e300", nil), ("9223372036854775808", RetryAfter.maximum), ("-1", nil), ("NaN", nil), ("inf", nil), ("", nil),
        ("\u{0663}", nil), ("Fri, 31 Dec 9999 23:59:59 GMT", RetryAfter.maximum), ("5", .seconds(5)),
    ] as [(String, Duration?)])
    func absurdRetryAfterValuesAreIgnoredOrClamped(value: String, expected: Duration?) {
        for status in [429, 503] {
            let result = WebPushOutcomeMapping.result(status: status, retryAfter: value, now: Self.now)
            #expect(result.outcome.isRetryable)
            #expect(result.retryAfter == expected)
        }
    }

    /// An expiry in UNIX seconds far beyond any date (`Int64.max` seconds) used to trap converting the time left to
    /// `Int`; the time to live is now the longest allowed.
    @Test(arguments: [
        ("9223372036854775807", WebPushHeaders.maximumTimeToLive), ("-9223372036854775808", 0),
        ("99999999999", WebPushHeaders.maximumTimeToLive), ("1700000060", 60),
    ])
    func expiriesFarAwayGiveTheLongestTimeToLive(expiry: String, expected: Int) {
        let headers: NotificationHeaders = [NotificationHeaders.expiry: expiry]
        #expect(WebPushHeaders.timeToLive(for: headers, default: 3600, now: Self.now) == expected)
    }
}
