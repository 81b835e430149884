import AdapterKit
import Foundation
import NIOCore
import PushEmulator
import Testing

@testable import APNs

/// Numbers in APNs answers are read with checked conversions: an absurd `timestamp` or `retry-after` is ignored or
/// clamped, never a crash.
@Suite struct APNsAnswerParsingTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    /// `timestamp: 1e300` used to trap converting to `Int64`.
    @Test(arguments: ["1e300", "-1e300", "9223372036854775808", "1.8e19"])
    func timestampsOutsideInt64AreIgnored(timestamp: String) {
        let parsed = APNsResponseBody.parse(ByteBuffer(string: #"{"reason":"Unregistered","timestamp":\#(timestamp)}"#))
        #expect(parsed.reason == "Unregistered")
        #expect(parsed.timestamp == nil)
    }

    @Test func expiryTimesAreNeverInTheFutureNorBefore1970() {
        let future = APNsOutcomeMapping.result(status: 410, reason: "Unregistered", timestamp: .max, now: Self.now)
        #expect(future.outcome == .expiredChannel && future.channelExpiredAt == Self.now)
        let negative = APNsOutcomeMapping.result(status: 410, reason: "Unregistered", timestamp: -1, now: Self.now)
        #expect(negative.outcome == .expiredChannel && negative.channelExpiredAt == nil)
        let past = APNsOutcomeMapping.result(status: 410, reason: "Unregistered", timestamp: 1_600_000_000_000, now: Self.now)
        #expect(past.channelExpiredAt == Date(timeIntervalSince1970: 1_600_000_000))
    }

    @Test(arguments: [
        ("1e300", nil), ("9223372036854775808", RetryAfter.maximum), ("-1", nil), ("NaN", nil), ("inf", nil), ("", nil),
        ("\u{0663}", nil), (String(repeating: "9", count: 10_000), RetryAfter.maximum),
    ] as [(String, Duration?)])
    func absurdRetryAfterValuesAreIgnoredOrClamped(value: String, expected: Duration?) {
        let result = APNsOutcomeMapping.result(status: 429, reason: "TooManyRequests", retryAfter: value, now: Self.now)
        #expect(result.outcome == .throttled)
        #expect(result.retryAfter == expected)
    }

    /// IdleTimeout is retryable only as the 400 APNs documents; under another status the status decides.
    @Test func idleTimeoutIsRetryableOnlyAsA400() {
        #expect(APNsOutcomeMapping.result(status: 400, reason: "IdleTimeout").outcome == .pnsUnreachable)
        #expect(APNsOutcomeMapping.result(status: 404, reason: "IdleTimeout").outcome == .unknownError)
        #expect(APNsOutcomeMapping.result(status: 410, reason: "IdleTimeout").outcome == .expiredChannel)
    }

    /// A refusal whose body breaks off (the stream is reset after the status) is still the refusal, not an
    /// unreachable platform to retry; an absurd timestamp in a 410 answer from the wire is survived.
    @Test func answersFromTheWireWithBrokenBodiesOrAbsurdNumbers() async throws {
        try await APNsHarness.with { hub in
            let token = APNsHarness.deviceToken(1)
            func deliver() async -> DeliveryResult {
                let delivery = Delivery(
                    notificationID: "n", installationID: nil, platform: .apns, pushChannel: .handle(token), format: .apple,
                    payload: ByteBuffer(string: #"{"aps":{"alert":"hi"}}"#), headers: [:])
                return await hub.adapter.deliver([delivery])[0]
            }
            hub.emulator.faults = FaultInjection(
                answer: RawAnswer(status: 400, body: Array(#"{"reason":"BadDeviceToken"}"#.utf8), truncated: true))
            #expect(await deliver().outcome == .invalidNotificationFormat)
            hub.emulator.faults = FaultInjection(
                answer: RawAnswer(status: 410, body: Array(#"{"reason":"Unregistered","timestamp":1e300}"#.utf8)))
            let gone = await deliver()
            #expect(gone.outcome == .expiredChannel && gone.reason == "Unregistered" && gone.channelExpiredAt == nil)
            hub.emulator.faults = FaultInjection(
                answer: RawAnswer(status: 429, headers: [.init("retry-after", "1e300")], body: Array(#"{"reason":"TooManyRequests"}"#.utf8)))
            let throttled = await deliver()
            #expect(throttled.outcome == .throttled && throttled.retryAfter == nil)
        }
    }
}
