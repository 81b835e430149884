import APNs
import Foundation
import InMemoryTracing
import NIOCore
import NotificationHub
import PushEmulator
import Testing
import Tracing

/// The APNs adapter's request spans (``PlatformTracing``): the requests of a sampled batch, multiplexed on one
/// connection, each recorded from their common start within the batch's budget, under the batch's span.
@Suite struct APNsTracingTests {
    static func deliveries(_ tokens: [String], attempt: Int = 1) -> [Delivery] {
        tokens.enumerated().map { index, token in
            Delivery(
                notificationID: "n", installationID: "i\(index)", platform: .apns, pushChannel: .handle(token), format: .apple,
                payload: ByteBuffer(string: #"{"aps":{"alert":"traced"}}"#), headers: [:], attempt: attempt)
        }
    }

    @Test func aSampledBatchRecordsItsFailuresAndFourSuccesses() async throws {
        try await APNsHarness.with { (hub) async throws in
            let gone = APNsHarness.deviceToken(99)
            hub.emulator.setDevice(gone, .unregistered(Date().addingTimeInterval(60)))
            let tokens = (0..<12).map(APNsHarness.deviceToken) + [gone]
            let tracer = InMemoryTracer()
            let batchSpanID = await tracer.withSpan("adapter.batch") { span in
                let tracing = PlatformTracing(tracer: tracer, platform: "apns", recordsRequests: true)
                let results = await PlatformTracing.$current.withValue(tracing) {
                    await hub.adapter.deliver(Self.deliveries(tokens), context: .standalone())
                }
                #expect(results.filter { $0.outcome == .success }.count == 12)
                #expect(results.last?.outcome == .expiredChannel)
                return tracer.activeSpan(identifiedBy: span.context)?.spanID ?? ""
            }
            let requests = tracer.finishedSpans.filter { $0.operationName == "platform.request" }
            #expect(requests.count == 1 + PlatformTracing.maximumSuccessSpans)
            #expect(requests.allSatisfy { $0.parentSpanID == batchSpanID && $0.kind == .client })
            let failed = try #require(requests.first { $0.status?.code == .error })
            #expect(failed.attributes["http.response.status_code"]?.toSpanAttribute() == 410.toSpanAttribute())
            #expect(failed.attributes["push.reason"]?.toSpanAttribute() == "Unregistered".toSpanAttribute())
        }
    }

    @Test func retriedDeliveriesAreAllRecordedUpToTheBudgetAndUnsampledBatchesNotAtAll() async throws {
        try await APNsHarness.with { (hub) async throws in
            let tokens = (0..<40).map(APNsHarness.deviceToken)
            let tracer = InMemoryTracer()
            let sampled = PlatformTracing(tracer: tracer, platform: "apns", recordsRequests: true)
            _ = await PlatformTracing.$current.withValue(sampled) {
                await hub.adapter.deliver(Self.deliveries(tokens, attempt: 2), context: .standalone())
            }
            // Every request is a retry (notable), so the budget, not the successes' share, bounds them.
            let requests = tracer.finishedSpans.filter { $0.operationName == "platform.request" }
            #expect(requests.count == PlatformTracing.maximumRequestSpans)
            #expect(requests.allSatisfy { $0.attributes["request.retry"]?.toSpanAttribute() == 1.toSpanAttribute() })

            tracer.clearAll()
            let unsampled = PlatformTracing(tracer: tracer, platform: "apns", recordsRequests: false)
            _ = await PlatformTracing.$current.withValue(unsampled) {
                await hub.adapter.deliver(Self.deliveries(tokens), context: .standalone())
            }
            #expect(tracer.finishedSpans.isEmpty)
        }
    }
}
