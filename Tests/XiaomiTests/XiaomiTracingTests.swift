import AdapterKit
import InMemoryTracing
import NIOCore
import NotificationHub
import PushEmulator
import Testing
import Tracing
import Xiaomi

/// The Xiaomi adapter's spans (``PlatformTracing``) against the emulator: one `platform.request` span per Mi Push
/// request of a sampled batch, carrying how many devices it answered for and the outcome that decided its status.
@Suite struct XiaomiTracingTests {
    static func deliveries(_ names: [String], attempt: Int = 1) -> [Delivery] {
        names.map { name in
            Delivery(
                notificationID: "n", installationID: name, platform: .xiaomi, pushChannel: .handle(XiaomiHarness.registrationID(name)),
                format: .xiaomi, payload: ByteBuffer(string: #"{"pass_through":1,"payload":"x"}"#), headers: [:], attempt: attempt)
        }
    }

    @Test func aSampledBatchRecordsEachRequestWithItsDeliveriesAndDecisiveOutcome() async throws {
        try await XiaomiHarness.with(batchSize: 4) { hub in
            hub.emulator.markInvalid([XiaomiHarness.registrationID("gone")])
            let tracer = InMemoryTracer()
            let names = (0..<7).map { "d\($0)" } + ["gone"]
            let batchSpanID = await tracer.withSpan("adapter.batch") { span in
                let tracing = PlatformTracing(tracer: tracer, platform: "xiaomi", recordsRequests: true)
                let results = await PlatformTracing.$current.withValue(tracing) {
                    await hub.adapter.deliver(Self.deliveries(names), context: .standalone())
                }
                #expect(results.filter { $0.outcome == .success }.count == 7)
                #expect(results.last?.outcome == .expiredChannel)
                return tracer.activeSpan(identifiedBy: span.context)?.spanID ?? ""
            }
            // Two requests of four ids: one all delivered, one naming the bad id.
            let requests = tracer.finishedSpans.filter { $0.operationName == "platform.request" }
            #expect(requests.count == 2)
            #expect(requests.allSatisfy {
                $0.parentSpanID == batchSpanID && $0.kind == .client
                    && $0.attributes["request.deliveries"]?.toSpanAttribute() == 4.toSpanAttribute()
                    && $0.attributes["http.response.status_code"]?.toSpanAttribute() == 200.toSpanAttribute()
            })
            let failed = try #require(requests.first { $0.status?.code == .error })
            #expect(failed.attributes["push.outcome"]?.toSpanAttribute() == "ExpiredChannel".toSpanAttribute())
            #expect(failed.attributes["push.reason"]?.toSpanAttribute() == "bad_regids".toSpanAttribute())
            #expect(requests.filter { $0.status == nil }.count == 1)
        }
    }

    @Test func aRetryIsRecordedWithItsNumberAndNoTracingRecordsNothing() async throws {
        try await XiaomiHarness.with { hub in
            let tracer = InMemoryTracer()
            hub.emulator.setFaults(FaultInjection(unavailableRate: 1, retryAfterSeconds: 2))
            let tracing = PlatformTracing(tracer: tracer, platform: "xiaomi", recordsRequests: true)
            let results = await PlatformTracing.$current.withValue(tracing) {
                await hub.adapter.deliver(Self.deliveries(["r"], attempt: 3), context: .standalone())
            }
            #expect(results == [DeliveryResult(.pnsUnavailable, reason: "10002", retryAfter: .seconds(2))])
            let span = try #require(tracer.finishedSpans.first)
            #expect(span.attributes["request.retry"]?.toSpanAttribute() == 2.toSpanAttribute())
            #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == 503.toSpanAttribute())

            tracer.clearAll()
            hub.emulator.setFaults(.none)
            #expect(await hub.adapter.deliver(Self.deliveries(["u"]), context: .standalone()) == [.success])
            #expect(tracer.finishedSpans.isEmpty)
        }
    }
}
