import AdapterKit
import FCM
import Foundation
import HubTestSupport
import NIOCore
import NotificationHub
import PushEmulator
import Testing

/// Generated FCM answers, from the send endpoint and from the OAuth token endpoint (any status, absurd
/// `Retry-After` and `expires_in`, Google error bodies with any codes, malformed, huge, non-UTF-8 or cut-off
/// bodies), served by the emulator as given: no answer crashes the adapter, every device ends with an outcome, a
/// permanent refusal is never retryable, and waits stay within bounds.
@Suite struct FCMAnswerPropertyTests {
    static let sendCases = 80
    static let tokenCases = 25
    static let dispatchedCases = 8
    static let payload = #"{"message":{"data":{"a":"1"}}}"#

    /// Google's codes (the retryable ones thrice: they must not make a 4xx retryable), field paths and messages.
    static let codes = [
        "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL", "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL",
        "RESOURCE_EXHAUSTED", "UNREGISTERED", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL", "INVALID_ARGUMENT",
        "THIRD_PARTY_AUTH_ERROR", "RESOURCE_EXHAUSTED", "PERMISSION_DENIED", "UNAUTHENTICATED", "NOT_FOUND",
        "message.token", "Message is too big", "",
    ]

    static func sendAnswer(_ generator: inout AnswerGenerator) -> GeneratedAnswer {
        generator.answer(
            headerNames: ["Retry-After", "Content-Type"],
            templates: [
                #"{"error":{"code":#,"message":$,"status":$,"details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":$}]}}"#,
                #"{"error":{"code":#,"status":$,"details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":$},{"field":#}]}]}}"#,
                #"{"error":{"status":$,"details":[{"errorCode":$}]}}"#, #"{"error":{"status":$}}"#,
                #"{"error":{"code":#,"status":#,"details":#}}"#, #"{"error":#}"#, #"{"name":$}"#, "[#]", #"{"error":{"details":[#,$]}}"#,
            ],
            strings: codes)
    }

    static func check(_ result: DeliveryResult, status: Int, _ description: @autoclosure () -> String) {
        let problems = AnswerChecks.problems(result, status: status)
        #expect(problems.isEmpty, "\(description()) -> \(problems)")
    }

    @Test func noSendAnswerCrashesTheAdapterOrMakesAPermanentRefusalRetryable() async throws {
        try await FCMHarness.with { hub in
            // A valid access token first, so the generated answers reach the send path.
            #expect(await hub.deliver(.fcmv1, Self.payload, to: FCMHarness.token("warm-up")) == .success)
            var generator = AnswerGenerator(seed: 0xFC_5E4D)
            for index in 0..<Self.sendCases {
                let answer = Self.sendAnswer(&generator)
                hub.emulator.setFaults(FaultInjection(answer: RawAnswer(answer)))
                let deliveries = (0..<2).map { device in
                    Delivery(
                        notificationID: "n\(index)", installationID: nil, platform: .fcmv1,
                        pushChannel: .handle(FCMHarness.token("d\(index)-\(device)")), format: .fcmv1,
                        payload: ByteBuffer(string: Self.payload), headers: [:])
                }
                let results = await AnswerChecks.deliver(deliveries, with: hub.adapter)
                #expect(results.count == deliveries.count, "\(answer)")
                for result in results { Self.check(result, status: answer.status, "\(answer)") }
            }
        }
    }

    @Test func noTokenAnswerCrashesTheAdapterOrMakesARefusalRetryable() async throws {
        try await FCMHarness.with { hub in
            var generator = AnswerGenerator(seed: 0xFC_70CE)
            for _ in 0..<Self.tokenCases {
                let answer = generator.answer(
                    headerNames: ["Retry-After", "Content-Type"],
                    templates: [
                        #"{"access_token":$,"expires_in":#,"token_type":"Bearer"}"#, #"{"access_token":$,"expires_in":#}"#,
                        #"{"error":$,"error_description":$}"#, #"{"access_token":#,"expires_in":$}"#, #"{"expires_in":#}"#,
                    ],
                    strings: ["ya29.generated", "invalid_grant", "invalid_client", "", "3600", "nan"])
                hub.emulator.setFaults(FaultInjection(tokenAnswer: RawAnswer(answer)))
                // A new adapter has no cached token: it asks the token endpoint.
                let adapter = try hub.makeAdapter()
                let result = await hub.deliver(.fcmv1, Self.payload, to: FCMHarness.token("t"), with: adapter)
                try await adapter.shutdown()
                Self.check(result, status: answer.status, "token \(answer)")
            }
        }
    }

    @Test func everyDeviceOfADispatchEndsWithAnOutcome() async throws {
        let quick = DeliveryConfiguration(
            pageSize: 50, batchSize: 25, concurrency: 2, abandonAfterSeconds: 1, maximumAttempts: 2,
            initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.02)
        try await FCMHarness.with(delivery: quick) { hub in
            var generator = AnswerGenerator(seed: 0xFC_D15)
            for index in 0..<Self.dispatchedCases {
                let answer = Self.sendAnswer(&generator)
                hub.emulator.setFaults(FaultInjection(answer: RawAnswer(answer)))
                let handles = (0..<4).map { PushChannel.handle(FCMHarness.token("c\(index)-\($0)")) }
                let summary = try await hub.send(.fcmv1, Self.payload, to: .handles(.fcmv1, handles))
                #expect(summary.total == handles.count, "\(answer) -> \(summary.counts)")
            }
        }
    }
}
