import ADM
import AdapterKit
import Foundation
import HubTestSupport
import NIOCore
import NotificationHub
import PushEmulator
import Testing

/// Generated ADM answers (any status, absurd `Retry-After`, reasons real and made up, malformed, huge, non-UTF-8 or
/// cut-off bodies), served by the emulator as given: no answer crashes the adapter, every device ends with an
/// outcome, a permanent refusal is never retryable, and waits stay within bounds.
@Suite struct ADMAnswerPropertyTests {
    static let cases = 100

    @Test func noAnswerCrashesTheAdapterOrMakesAPermanentRefusalRetryable() async throws {
        try await ADMHarness.with { hub in
            let ids = [ADMHarness.registrationID("p1"), ADMHarness.registrationID("p2")]
            var generator = AnswerGenerator(seed: 0xAD_4A11)
            for index in 0..<Self.cases {
                let answer = generator.answer(
                    headerNames: ["Retry-After", "X-Amzn-ErrorType", "Content-Type"],
                    values: ["Unregistered:http://internal.amazon.com/coral/", "MaxRateExceeded:", ":", "", "InvalidData"],
                    templates: [#"{"reason":$}"#, #"{"registrationID":$}"#, "#", "<html>$</html>", #"{"reason":#}"#],
                    strings: [
                        "Unregistered", "InvalidRegistrationId", "MaxRateExceeded", "AccessTokenExpired", "MessageTooLarge",
                        "amzn1.adm-registration.v3.new", "", "not an id",
                    ])
                hub.emulator.setFaults(FaultInjection(answer: RawAnswer(answer)))
                let deliveries = ids.map {
                    Delivery(
                        notificationID: "n\(index)", installationID: nil, platform: .adm, pushChannel: .handle($0), format: .adm,
                        payload: ByteBuffer(string: #"{"data":{"k":"v"}}"#), headers: [:])
                }
                let results = await AnswerChecks.deliver(deliveries, with: hub.adapter)
                #expect(results.count == deliveries.count, "\(answer)")
                for result in results {
                    let problems = AnswerChecks.problems(result, status: answer.status)
                    #expect(problems.isEmpty, "\(answer) -> \(problems)")
                    if let canonical = result.canonicalPushChannel {
                        #expect(ADMAdapter.isWellFormed(registrationID: canonical), "\(answer)")
                    }
                }
            }
        }
    }
}
