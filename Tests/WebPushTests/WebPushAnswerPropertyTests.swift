import AdapterKit
import Foundation
import HubTestSupport
import NIOCore
import NotificationHub
import PushEmulator
import Testing
import WebPush

/// Generated push service answers (any status, absurd `Retry-After`, any `Location`, malformed, huge, non-UTF-8 or
/// cut-off bodies), served by the emulator as given: no answer crashes the adapter, every device ends with an
/// outcome, a permanent refusal is never retryable, and waits stay within bounds.
@Suite struct WebPushAnswerPropertyTests {
    static let cases = 100
    static let dispatchedCases = 8

    static func answer(_ generator: inout AnswerGenerator) -> GeneratedAnswer {
        generator.answer(
            headerNames: ["Retry-After", "Location", "Link", "TTL", "Content-Type"],
            values: ["https://localhost/m/1", "/m/\u{00e9}", "", "-1", "1e300", "9223372036854775808", "not a url"],
            templates: [#"{"code":#,"errno":#,"error":$,"message":$}"#, "#", "<html>$</html>", #"{"errno":$}"#],
            strings: ["Gone", "Too Many Requests", ""])
    }

    static func check(_ result: DeliveryResult, status: Int, _ description: @autoclosure () -> String) {
        let problems = AnswerChecks.problems(result, status: status)
        #expect(problems.isEmpty, "\(description()) -> \(problems)")
    }

    @Test func noAnswerCrashesTheAdapterOrMakesAPermanentRefusalRetryable() async throws {
        try await WebPushHarness.with { hub in
            let subscriptions = [
                hub.emulator.createSubscription(applicationServerKey: WebPushHarness.keys.publicKey),
                hub.emulator.createSubscription(applicationServerKey: WebPushHarness.keys.publicKey),
            ]
            var generator = AnswerGenerator(seed: 0x3EB_9054)
            for index in 0..<Self.cases {
                let answer = Self.answer(&generator)
                hub.emulator.setFaults(FaultInjection(answer: RawAnswer(answer)))
                let deliveries = subscriptions.map { subscription in
                    Delivery(
                        notificationID: "n\(index)", installationID: nil, platform: .browser,
                        pushChannel: subscription.pushChannel, format: .browser, payload: ByteBuffer(string: "hello"),
                        headers: [:])
                }
                let results = await AnswerChecks.deliver(deliveries, with: hub.adapter)
                #expect(results.count == deliveries.count, "\(answer)")
                for result in results { Self.check(result, status: answer.status, "\(answer)") }
            }
        }
    }

    @Test func everyDeviceOfADispatchEndsWithAnOutcome() async throws {
        let quick = DeliveryConfiguration(
            pageSize: 50, batchSize: 20, concurrency: 2, abandonAfterSeconds: 1, maximumAttempts: 2,
            initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.02)
        try await WebPushHarness.with(delivery: quick) { hub in
            var generator = AnswerGenerator(seed: 0x3EB_D15)
            for index in 0..<Self.dispatchedCases {
                let answer = Self.answer(&generator)
                hub.emulator.setFaults(FaultInjection(answer: RawAnswer(answer)))
                for device in 0..<4 { try await hub.register("c\(index)-\(device)", tags: ["case\(index)"]) }
                let summary = try await hub.send("hello", to: .tags(try TagExpression(parsing: "case\(index)")))
                #expect(summary.total == 4, "\(answer) -> \(summary.counts)")
            }
        }
    }
}
