import AdapterKit
import Foundation
import NIOCore
import NIOHTTP1
import NotificationHub
import PushEmulator
import Testing

@testable import FCM

/// Numbers in FCM's answers are read with checked conversions: an absurd `expires_in` or `Retry-After` is clamped
/// or ignored, never a crash; a refusal's status decides even when its body is unusable.
@Suite struct FCMAnswerParsingTests {
    static let ok = #"{"message":{"data":{"a":"1"}}}"#

    @Test(arguments: [
        (JSONValue.number(1e300), PlatformNumber.maximumTokenLifetime), (.number(.infinity), PlatformNumber.maximumTokenLifetime),
        (.number(9_223_372_036_854_775_808), PlatformNumber.maximumTokenLifetime), (.number(-1), .seconds(3600)),
        (.number(0), .seconds(3600)), (.number(.nan), .seconds(3600)), (.number(1e-300), PlatformNumber.minimumTokenLifetime),
        (.number(3599), .seconds(3599)), (.string("7200"), .seconds(7200)), (.string("nan"), .seconds(3600)),
        (.string("1e300"), .seconds(3600)), (.string("9223372036854775808"), .seconds(3600)), (.string(""), .seconds(3600)),
        (.null, .seconds(3600)), (.array([]), .seconds(3600)),
    ] as [(JSONValue, Duration)])
    func expiresInIsClampedOrIgnored(value: JSONValue, expected: Duration) {
        #expect(FCMAccessTokenProvider.lifetime(expiresIn: value) == expected)
    }

    /// `expires_in: 1e300` used to trap converting to `Int`; now the token is used (and renewed) as any other.
    @Test(arguments: ["1e300", "-1", "9223372036854775808", "\"nan\"", "1e-300"])
    func anAbsurdExpiresInFromTheWireIsSurvived(expiresIn: String) async throws {
        try await FCMHarness.with { hub in
            hub.emulator.setFaults(
                FaultInjection(
                    tokenAnswer: RawAnswer(
                        status: 200, headers: [.init("Content-Type", "application/json")],
                        body: Array(#"{"access_token":"ya29.unknown","expires_in":\#(expiresIn)}"#.utf8))))
            // The emulator did not issue that token: FCM answers 401, the adapter renews once, then gives up.
            let result = await hub.deliver(.fcmv1, Self.ok, to: FCMHarness.token("a"))
            #expect(result.outcome == .invalidCredentials)
            #expect(hub.emulator.unauthenticatedSendCount == 2)
        }
    }

    @Test func absurdRetryAfterValuesAreIgnoredOrClamped() {
        func wait(_ value: String) -> Duration? {
            FCMAdapter.result(status: .serviceUnavailable, headers: ["Retry-After": value], body: ByteBuffer()).retryAfter
        }
        #expect(wait("1e300") == nil)
        #expect(wait("-1") == nil)
        #expect(wait("9223372036854775808") == RetryAfter.maximum)
        #expect(wait("Fri, 31 Dec 9999 23:59:59 GMT") == RetryAfter.maximum)
        // Without a usable Retry-After, throttling waits the quota backoff.
        #expect(FCMAdapter.result(status: .tooManyRequests, headers: ["Retry-After": "NaN"], body: ByteBuffer()).retryAfter == FCMAdapter.quotaBackoff)
    }

    /// Only 429 and 5xx are retried: a body naming a retryable code under a 4xx status does not make it retryable.
    @Test(arguments: ["UNAVAILABLE", "INTERNAL", "QUOTA_EXCEEDED", "RESOURCE_EXHAUSTED"])
    func retryableCodesUnderAPermanentStatusAreNotRetried(code: String) {
        let body = ByteBuffer(
            string: #"{"error":{"code":400,"status":"\#(code)","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(code)"}]}}"#)
        for status in [HTTPResponseStatus.badRequest, .forbidden, .notFound, .conflict, .gone] {
            #expect(!FCMAdapter.result(status: status, headers: [:], body: body).outcome.isRetryable, "\(status) \(code)")
        }
        #expect(FCMAdapter.result(status: .serviceUnavailable, headers: [:], body: body).outcome.isRetryable)
    }

    /// A 400 whose body is larger than the adapter reads, or cut off, is still a permanent refusal.
    @Test func refusalsWithHugeOrBrokenBodiesAreNotUnreachable() async throws {
        try await FCMHarness.with { hub in
            #expect(await hub.deliver(.fcmv1, Self.ok, to: FCMHarness.token("warm-up")) == .success)
            let huge = Array(#"{"error":{"message":""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: 200_000) + Array(#""}}"#.utf8)
            hub.emulator.setFaults(FaultInjection(answer: RawAnswer(status: 400, body: huge)))
            #expect(await hub.deliver(.fcmv1, Self.ok, to: FCMHarness.token("a")).outcome == .invalidNotificationFormat)
            hub.emulator.setFaults(
                FaultInjection(answer: RawAnswer(status: 404, body: Array(#"{"error":{"status":"NOT_FOUND"}}"#.utf8), truncated: true)))
            #expect(await hub.deliver(.fcmv1, Self.ok, to: FCMHarness.token("b")).outcome == .expiredChannel)
        }
    }
}
