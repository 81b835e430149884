import AdapterKit
import Foundation
import HubTestSupport
import NIOCore
import NotificationHub
import PushEmulator
import Testing
import Xiaomi

/// Generated Mi Push answers (any status, absurd `Retry-After`, codes real and made up, `bad_regids` naming ids sent
/// and not, malformed, huge, non-UTF-8 or cut-off bodies), served by the emulator as given: no answer crashes the
/// adapter, every device ends with an outcome, a permanent refusal is never retryable, and waits stay within bounds.
@Suite struct XiaomiAnswerPropertyTests {
    static let cases = 100

    @Test func noAnswerCrashesTheAdapterOrMakesAPermanentRefusalRetryable() async throws {
        try await XiaomiHarness.with { hub in
            let ids = [XiaomiHarness.registrationID("p1"), XiaomiHarness.registrationID("p2")]
            var generator = AnswerGenerator(seed: 0x0D1_A0C1)
            for index in 0..<Self.cases {
                let answer = generator.answer(
                    headerNames: ["Retry-After", "Content-Type"],
                    templates: [
                        #"{"result":"error","code":$,"reason":"x"}"#, #"{"result":"ok","code":0,"data":{"bad_regids":$}}"#,
                        #"{"code":#}"#, "<html>$</html>", #"{"code":$}"#,
                    ],
                    strings: [
                        "0", "20301", "21301", "10002", "10027", "65009", "-1", "1e300", "9223372036854775808", ids[0],
                        "\(ids[0]),\(ids[1])", ",,,", "",
                    ])
                hub.emulator.setFaults(FaultInjection(answer: RawAnswer(answer)))
                let deliveries = ids.map {
                    Delivery(
                        notificationID: "n\(index)", installationID: nil, platform: .xiaomi, pushChannel: .handle($0), format: .xiaomi,
                        payload: ByteBuffer(string: #"{"pass_through":1,"payload":"x"}"#), headers: [:])
                }
                let results = await AnswerChecks.deliver(deliveries, with: hub.adapter)
                #expect(results.count == deliveries.count, "\(answer)")
                for result in results {
                    let problems = AnswerChecks.problems(result, status: answer.status)
                    #expect(problems.isEmpty, "\(answer) -> \(problems)")
                }
            }
        }
    }
}
