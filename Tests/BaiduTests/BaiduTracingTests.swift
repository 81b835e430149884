import AdapterKit
import Baidu
import InMemoryTracing
import NIOCore
import NotificationHub
import PushEmulator
import Testing
import Tracing

/// The Baidu adapter's spans (``PlatformTracing``) against the emulator: each request a sampled batch makes, within
/// the batch's budget, with its status, outcome, Baidu's code and its retry number; a `batch_device` request is one
/// span for all its channels.
@Suite struct BaiduTracingTests {
    static func deliveries(_ numbers: [Int], attempt: Int = 1) -> [Delivery] {
        numbers.map { number in
            Delivery(
                notificationID: "n", installationID: "i\(number)", platform: .baidu, pushChannel: .handle(BaiduHarness.handle(number)),
                format: .baidu, payload: ByteBuffer(string: #"{"k":"v"}"#), headers: [:], attempt: attempt)
        }
    }

    @Test func aSampledBatchRecordsItsRequestsWithinBudget() async throws {
        try await BaiduHarness.with { hub in
            hub.emulator.markUnbound([BaiduHarness.channelID(99)])
            let tracer = InMemoryTracer()
            let tracing = PlatformTracing(tracer: tracer, platform: "baidu", recordsRequests: true)
            let results = await PlatformTracing.$current.withValue(tracing) {
                await hub.adapter.deliver(Self.deliveries(Array(0..<10) + [99]), context: .standalone())
            }
            #expect(results.filter { $0.outcome == .success }.count == 10)
            #expect(results.last?.outcome == .expiredChannel)
            let requests = tracer.finishedSpans.filter { $0.operationName == "platform.request" }
            #expect(requests.count == 1 + PlatformTracing.maximumSuccessSpans)
            let failed = try #require(requests.first { $0.status?.code == .error })
            #expect(failed.attributes["http.response.status_code"]?.toSpanAttribute() == 404.toSpanAttribute())
            #expect(failed.attributes["push.outcome"]?.toSpanAttribute() == "ExpiredChannel".toSpanAttribute())
            #expect(failed.attributes["push.reason"]?.toSpanAttribute() == "30608".toSpanAttribute())
            #expect(requests.allSatisfy { $0.attributes["request.retry"]?.toSpanAttribute() == 0.toSpanAttribute() })
            // A retried delivery's request carries its retry number (and is recorded, though it succeeds).
            tracer.clearAll()
            let retried = await PlatformTracing.$current.withValue(tracing) {
                await hub.adapter.deliver(Self.deliveries([5], attempt: 3), context: .standalone())
            }
            #expect(retried == [.success])
            let request = try #require(tracer.finishedSpans.first { $0.operationName == "platform.request" })
            #expect(request.attributes["request.retry"]?.toSpanAttribute() == 2.toSpanAttribute())
        }
    }

    @Test func aBatchDeviceRequestIsOneSpanForAllItsChannels() async throws {
        try await BaiduHarness.with(batchSize: 100) { hub in
            let tracer = InMemoryTracer()
            let tracing = PlatformTracing(tracer: tracer, platform: "baidu", recordsRequests: true)
            let results = await PlatformTracing.$current.withValue(tracing) {
                await hub.adapter.deliver(Self.deliveries(Array(0..<7)), context: .standalone())
            }
            #expect(results.allSatisfy { $0.outcome == .success })
            let requests = tracer.finishedSpans.filter { $0.operationName == "platform.request" }
            #expect(requests.count == 1)
            #expect(requests.first?.attributes["request.deliveries"]?.toSpanAttribute() == 7.toSpanAttribute())
            // Without a current tracing nothing is recorded.
            tracer.clearAll()
            _ = await hub.adapter.deliver(Self.deliveries([1]), context: .standalone())
            #expect(tracer.finishedSpans.isEmpty)
        }
    }
}
