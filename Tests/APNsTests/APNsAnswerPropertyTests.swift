import AdapterKit
import Foundation
import HubTestSupport
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@testable import APNs

/// Generated APNs answers (any status, absurd `retry-after` and `timestamp`, malformed, huge, non-UTF-8 or cut-off
/// bodies), served by the emulator as given: no answer crashes the adapter, every device ends with an outcome, a
/// permanent refusal is never retryable, and waits and expiry times stay within bounds.
@Suite struct APNsAnswerPropertyTests {
    static let cases = 120
    static let dispatchedCases = 10

    static func answer(_ generator: inout AnswerGenerator) -> GeneratedAnswer {
        generator.answer(
            headerNames: ["retry-after", "apns-id", "apns-unique-id", "content-type"],
            values: ["4d1e5b6a-0000-8000-8000-000000000000", "not-a-uuid", ""],
            templates: [
                #"{"reason":$,"timestamp":#}"#, #"{"reason":$}"#, #"{"timestamp":#}"#, #"{"reason":#,"timestamp":$}"#,
                "[#]", "#", #"{"reason":$"#,
            ],
            strings: [
                "Unregistered", "ExpiredToken", "BadDeviceToken", "DeviceTokenNotForTopic", "IdleTimeout", "TooManyRequests",
                "ExpiredProviderToken", "Shutdown", "InternalServerError", "",
            ])
    }

    static func check(_ result: DeliveryResult, for answer: GeneratedAnswer) {
        // 400 IdleTimeout is APNs' one documented retryable refusal.
        let problems = AnswerChecks.problems(result, status: answer.status) { $0.reason == "IdleTimeout" && answer.status == 400 }
        #expect(problems.isEmpty, "\(answer) -> \(problems)")
    }

    @Test func noAnswerCrashesTheAdapterOrMakesAPermanentRefusalRetryable() async throws {
        try await APNsHarness.with { hub in
            var generator = AnswerGenerator(seed: 0x0A9_5001)
            for index in 0..<Self.cases {
                let answer = Self.answer(&generator)
                hub.emulator.faults = FaultInjection(answer: RawAnswer(answer))
                let deliveries = (0..<3).map { device in
                    Delivery(
                        notificationID: "n\(index)", installationID: nil, platform: .apns,
                        pushChannel: .handle(APNsHarness.deviceToken(index * 3 + device)), format: .apple,
                        payload: ByteBuffer(string: #"{"aps":{"alert":"hi"}}"#), headers: [:])
                }
                let results = await AnswerChecks.deliver(deliveries, with: hub.adapter)
                #expect(results.count == deliveries.count, "\(answer)")
                for result in results { Self.check(result, for: answer) }
            }
        }
    }

    @Test func everyDeviceOfADispatchEndsWithAnOutcome() async throws {
        let quick = DeliveryConfiguration(
            pageSize: 100, batchSize: 50, concurrency: 2, abandonAfterSeconds: 1, maximumAttempts: 2,
            initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.02)
        try await APNsHarness.with(delivery: quick) { hub in
            var generator = AnswerGenerator(seed: 0x0A9_5002)
            for index in 0..<Self.dispatchedCases {
                let answer = Self.answer(&generator)
                hub.emulator.faults = FaultInjection(answer: RawAnswer(answer))
                let tokens = (0..<4).map { APNsHarness.deviceToken(1000 + index * 4 + $0) }
                let summary = try await hub.sendDirect(to: tokens)
                #expect(summary.total == tokens.count, "\(answer) -> \(summary.counts)")
            }
        }
    }
}
