import AdapterKit
import FCM
import InMemoryTracing
import NIOCore
import NotificationHub
import PushEmulator
import Testing
import Tracing

/// The FCM adapter's spans (``PlatformTracing``) against the emulator: each platform request a sampled batch makes,
/// within the batch's budget, and the access-token fetch, all under the batch's span.
@Suite struct FCMTracingTests {
    static func deliveries(_ names: [String]) -> [Delivery] {
        names.map { name in
            Delivery(
                notificationID: "n", installationID: name, platform: .fcmv1, pushChannel: .handle(FCMHarness.token(name)),
                format: .fcmv1, payload: ByteBuffer(string: #"{"message":{"data":{"k":"v"}}}"#), headers: [:])
        }
    }

    @Test func aSampledBatchRecordsItsRequestsWithinBudgetAndTheTokenFetch() async throws {
        try await FCMHarness.with { hub in
            hub.emulator.unregister([FCMHarness.token("gone")])
            let tracer = InMemoryTracer()
            let names = (0..<10).map { "d\($0)" } + ["gone"]
            let batchSpanID = await tracer.withSpan("adapter.batch") { span in
                let tracing = PlatformTracing(tracer: tracer, platform: "fcmv1", recordsRequests: true)
                let results = await PlatformTracing.$current.withValue(tracing) {
                    await hub.adapter.deliver(Self.deliveries(names), context: .standalone())
                }
                #expect(results.filter { $0.outcome == .success }.count == 10)
                #expect(results.last?.outcome == .expiredChannel)
                return tracer.activeSpan(identifiedBy: span.context)?.spanID ?? ""
            }
            let spans = tracer.finishedSpans
            // One access-token fetch, shared by every request.
            let tokens = spans.filter { $0.operationName == "platform.token" }
            #expect(tokens.count == 1)
            #expect(tokens.first?.parentSpanID == batchSpanID)
            #expect(tokens.first?.attributes["push.platform"]?.toSpanAttribute() == "fcmv1".toSpanAttribute())
            // Eleven requests: the failure, and four of the ten that succeeded at once.
            let requests = spans.filter { $0.operationName == "platform.request" }
            #expect(requests.count == 1 + PlatformTracing.maximumSuccessSpans)
            #expect(requests.allSatisfy { $0.parentSpanID == batchSpanID && $0.kind == .client })
            let failed = try #require(requests.first { $0.status?.code == .error })
            #expect(failed.attributes["http.response.status_code"]?.toSpanAttribute() == 404.toSpanAttribute())
            #expect(failed.attributes["push.outcome"]?.toSpanAttribute() == "ExpiredChannel".toSpanAttribute())
            #expect(failed.attributes["push.reason"]?.toSpanAttribute() == "UNREGISTERED".toSpanAttribute())
            #expect(requests.filter { $0.status == nil }.allSatisfy {
                $0.attributes["http.response.status_code"]?.toSpanAttribute() == 200.toSpanAttribute()
                    && $0.attributes["request.retry"]?.toSpanAttribute() == 0.toSpanAttribute()
            })
        }
    }

    @Test func aBatchNotSampledRecordsOnlyTheTokenFetchAndNoTracingRecordsNothing() async throws {
        try await FCMHarness.with { hub in
            let tracer = InMemoryTracer()
            let tracing = PlatformTracing(tracer: tracer, platform: "fcmv1", recordsRequests: false)
            let results = await PlatformTracing.$current.withValue(tracing) {
                await hub.adapter.deliver(Self.deliveries(["a", "b", "c"]), context: .standalone())
            }
            #expect(results.allSatisfy { $0.outcome == .success })
            #expect(tracer.finishedSpans.map(\.operationName) == ["platform.token"])

            // A new adapter fetches its own token: without a current tracing nothing is recorded.
            tracer.clearAll()
            let other = try hub.makeAdapter()
            let untraced = await other.deliver(Self.deliveries(["a"]), context: .standalone())
            try await other.shutdown()
            #expect(untraced.first?.outcome == .success)
            #expect(tracer.finishedSpans.isEmpty)
        }
    }

    @Test func aRetriedRequestIsRecordedWithItsRetryNumberAndARenewedToken() async throws {
        try await FCMHarness.with { hub in
            // The emulator forgets the access token: FCM answers 401 and the adapter renews it within the request.
            _ = await hub.adapter.deliver(Self.deliveries(["warm"]), context: .standalone())
            hub.emulator.revokeAccessTokens()
            let tracer = InMemoryTracer()
            var retried = Self.deliveries(["r"])
            retried[0].attempt = 3
            let tracing = PlatformTracing(tracer: tracer, platform: "fcmv1", recordsRequests: true)
            let results = await PlatformTracing.$current.withValue(tracing) {
                await hub.adapter.deliver(retried, context: .standalone())
            }
            #expect(results.first?.outcome == .success)
            let request = try #require(tracer.finishedSpans.first { $0.operationName == "platform.request" })
            #expect(request.attributes["request.retry"]?.toSpanAttribute() == 2.toSpanAttribute())
            #expect(request.attributes["request.renewed_token"]?.toSpanAttribute() == true.toSpanAttribute())
            #expect(tracer.finishedSpans.filter { $0.operationName == "platform.token" }.count == 1)
        }
    }
}
