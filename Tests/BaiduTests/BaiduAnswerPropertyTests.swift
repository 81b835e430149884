import AdapterKit
import Baidu
import Foundation
import HubTestSupport
import NIOCore
import NotificationHub
import PushEmulator
import Testing

/// Generated Baidu answers (any status, absurd `Retry-After`, codes real and made up, malformed, huge, non-UTF-8 or
/// cut-off bodies), served by the emulator as given: no answer crashes the adapter, every device ends with an
/// outcome, a permanent refusal is never retryable unless Baidu's code says so, and waits stay within bounds.
@Suite struct BaiduAnswerPropertyTests {
    static let cases = 100

    @Test(arguments: [1, 10])
    func noAnswerCrashesTheAdapterOrMakesAPermanentRefusalRetryable(batchSize: Int) async throws {
        try await BaiduHarness.with(batchSize: batchSize) { hub in
            let handles = [BaiduHarness.handle(1), BaiduHarness.handle(2)]
            var generator = AnswerGenerator(seed: 0xBA1D_0 + UInt64(batchSize))
            for index in 0..<Self.cases {
                let answer = generator.answer(
                    headerNames: ["Retry-After", "Content-Type"],
                    values: ["application/json", "", "30608"],
                    templates: [
                        #"{"error_code":$,"error_msg":"x","request_id":1}"#, #"{"request_id":1,"response_params":{"msg_id":$}}"#,
                        "#", "<html>$</html>", #"{"error_code":#}"#,
                    ],
                    strings: ["30608", "30607", "30699", "30603", "30602", "1e300", "-1", "", "not a code"])
                hub.emulator.setFaults(FaultInjection(answer: RawAnswer(answer)))
                let deliveries = handles.map {
                    Delivery(
                        notificationID: "n\(index)", installationID: nil, platform: .baidu, pushChannel: .handle($0), format: .baidu,
                        payload: ByteBuffer(string: #"{"title":"t","description":"d"}"#), headers: ["X-Baidu-Message-Type": "1"])
                }
                let results = await AnswerChecks.deliver(deliveries, with: hub.adapter)
                #expect(results.count == deliveries.count, "\(answer)")
                for result in results {
                    let problems = AnswerChecks.problems(
                        result, status: answer.status, isRetryableRefusal: BaiduOutcomeMapping.isRetryableRefusal)
                    #expect(problems.isEmpty, "\(answer) -> \(problems)")
                }
            }
        }
    }
}
