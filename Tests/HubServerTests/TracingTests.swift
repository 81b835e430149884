import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NIOCore
import NotificationHub
import Synchronization
import Testing

/// Tracing with `observability.tracing`: a send's W3C trace continues through the accept, the partition's delivery,
/// each audience page and the sampled adapter batches, exported over OTLP/HTTP to a real receiver in the test, whose
/// protobuf is decoded here field by field (not with the exporter's own types).
@Suite struct TracingTests {
    /// A span as decoded from an `ExportTraceServiceRequest`.
    struct DecodedSpan: Sendable {
        var traceID: String
        var spanID: String
        var parentSpanID: String
        var name: String
        var attributes: [String: String]
        var events: [String]
    }

    /// An OTLP/HTTP traces receiver: records every export's spans, and the service name of its resource.
    final class Receiver: Sendable {
        let state = Mutex((spans: [DecodedSpan](), contentTypes: Set<String>(), serviceNames: Set<String>()))

        var spans: [DecodedSpan] { state.withLock { $0.spans } }

        func receive(_ body: ByteBuffer, contentType: String?) -> HTTPResponse.Status {
            guard let request = try? OTLPWire.message(Array(body.readableBytesView)) else { return .badRequest }
            var spans: [DecodedSpan] = []
            var services: Set<String> = []
            for resourceSpans in request.messages(1) {
                let resource = resourceSpans.messages(1).first
                for attribute in resource?.messages(1) ?? [] where attribute.string(1) == "service.name" {
                    services.insert(attribute.messages(2).first?.string(1) ?? "")
                }
                for scopeSpans in resourceSpans.messages(2) {
                    for span in scopeSpans.messages(2) {
                        var attributes: [String: String] = [:]
                        for pair in span.messages(9) {
                            guard let key = pair.string(1), let value = pair.messages(2).first else { continue }
                            attributes[key] = value.string(1) ?? value.varint(3).map { String(Int64(bitPattern: $0)) } ?? value.varint(2).map { $0 == 1 ? "true" : "false" } ?? ""
                        }
                        spans.append(
                            DecodedSpan(
                                traceID: span.hex(1), spanID: span.hex(2), parentSpanID: span.hex(4), name: span.string(5) ?? "",
                                attributes: attributes, events: span.messages(11).compactMap { $0.string(2) }))
                    }
                }
            }
            state.withLock {
                $0.spans += spans
                $0.serviceNames.formUnion(services)
                if let contentType { $0.contentTypes.insert(contentType) }
            }
            return .ok
        }
    }

    /// Just enough of the protobuf wire format to read OTLP: fields by number, as varints, bytes or nested messages.
    struct OTLPWire {
        var fields: [(number: Int, varint: UInt64?, bytes: [UInt8]?)]

        static func message(_ bytes: [UInt8]) throws -> OTLPWire {
            var fields: [(Int, UInt64?, [UInt8]?)] = []
            var index = 0
            func varint() throws -> UInt64 {
                var value: UInt64 = 0
                var shift: UInt64 = 0
                while true {
                    guard index < bytes.count, shift < 64 else { throw HubError(.invalidNotification, "truncated varint") }
                    let byte = bytes[index]
                    index += 1
                    value |= UInt64(byte & 0x7F) << shift
                    if byte & 0x80 == 0 { return value }
                    shift += 7
                }
            }
            while index < bytes.count {
                let key = try varint()
                let number = Int(key >> 3)
                switch key & 7 {
                case 0: fields.append((number, try varint(), nil))
                case 1:
                    guard index + 8 <= bytes.count else { throw HubError(.invalidNotification, "truncated fixed64") }
                    fields.append((number, nil, Array(bytes[index..<index + 8])))
                    index += 8
                case 2:
                    let length = Int(try varint())
                    guard length >= 0, index + length <= bytes.count else { throw HubError(.invalidNotification, "truncated field") }
                    fields.append((number, nil, Array(bytes[index..<index + length])))
                    index += length
                case 5:
                    guard index + 4 <= bytes.count else { throw HubError(.invalidNotification, "truncated fixed32") }
                    fields.append((number, nil, Array(bytes[index..<index + 4])))
                    index += 4
                default: throw HubError(.invalidNotification, "wire type \(key & 7)")
                }
            }
            return OTLPWire(fields: fields.map { (number: $0.0, varint: $0.1, bytes: $0.2) })
        }

        func messages(_ number: Int) -> [OTLPWire] {
            fields.filter { $0.number == number }.compactMap { $0.bytes }.compactMap { try? OTLPWire.message($0) }
        }

        func string(_ number: Int) -> String? {
            fields.first { $0.number == number }?.bytes.map { String(decoding: $0, as: UTF8.self) }
        }

        func varint(_ number: Int) -> UInt64? { fields.first { $0.number == number }?.varint }

        func hex(_ number: Int) -> String {
            (fields.first { $0.number == number }?.bytes ?? []).map { String(format: "%02x", $0) }.joined()
        }
    }

    static func withReceiver<T: Sendable>(_ receiver: Receiver, _ body: @Sendable (Int) async throws -> T) async throws -> T {
        let router = Router()
        router.post("/v1/traces") { request, _ -> Response in
            let buffer = try await request.body.collect(upTo: 16 << 20)
            return Response(status: receiver.receive(buffer, contentType: request.headers[.contentType]))
        }
        return try await LoopbackServer.run(router, body)
    }

    static let callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let callerSpan = "00f067aa0ba902b7"

    @Test func aFanOutIsOneTraceFromTheSendersSpanToSampledAdapterBatches() async throws {
        let receiver = Receiver()
        try await Self.withReceiver(receiver) { port in
            let adapters = [RecordingAdapter(limit: 2000)]
            var settings = APITestHarness.settings(adapters: adapters)
            // 25 devices: pages of 10 (10, 10, 5), batches of 5: six batches, of which only each page's first is
            // traced at ratio 0.
            settings.delivery = DeliveryConfiguration(pageSize: 10, batchSize: 5, initialBackoffSeconds: 0.01)
            var configuration = HubsConfiguration(server: ServerConfiguration(), hubs: [settings])
            configuration.tracing = TracingConfiguration(
                endpoint: URL(string: "http://127.0.0.1:\(port)/v1/traces")!, serviceName: "hub-under-test", batchSampleRatio: 0)
            let answeredSpan = try await APITestHarness.run(configuration: configuration, adapters: adapters) { api in
                try await Self.sendTraced(api, receiver: receiver)
            }
            // Spans still buffered at shutdown are flushed by then.
            let spans = receiver.spans.filter { $0.traceID == Self.callerTrace }
            let accept = try #require(spans.first { $0.name == "notification.accept" })
            #expect(accept.parentSpanID == Self.callerSpan)
            #expect(accept.spanID == answeredSpan)
            #expect(accept.attributes["notification.id"] != nil)
            let deliver = try #require(spans.first { $0.name == "notification.deliver" })
            #expect(deliver.parentSpanID == accept.spanID)
            #expect(deliver.events.contains("claimed"))
            #expect(deliver.attributes["notification.targets"] == "25")
            let pages = spans.filter { $0.name == "audience.page" }
            #expect(pages.count == 3)
            #expect(pages.allSatisfy { $0.parentSpanID == deliver.spanID })
            #expect(Set(pages.compactMap { $0.attributes["page.deliveries"] }) == ["10", "5"])
            let batches = spans.filter { $0.name == "adapter.batch" }
            #expect(batches.count == 3, "the first batch of each page, none of the others at ratio 0")
            #expect(batches.allSatisfy { batch in pages.contains { $0.spanID == batch.parentSpanID } })
            #expect(batches.allSatisfy { $0.attributes["push.platform"] == "test" })
            let retried = batches.filter { $0.attributes["batch.retries"] == "1" }
            #expect(retried.count == 1)
            #expect(batches.map { Int($0.attributes["outcome.Success"] ?? "0") ?? 0 }.reduce(0, +) == 15)
            // Each sampled batch's platform requests are its children: of five devices, the first four that
            // succeed at once, and in the retried batch the throttled request and its retry too.
            let requests = spans.filter { $0.name == "platform.request" }
            #expect(requests.allSatisfy { request in batches.contains { $0.spanID == request.parentSpanID } })
            #expect(requests.count == 3 * 4 + 2)
            let throttled = try #require(requests.first { $0.attributes["push.outcome"] == "Throttled" })
            #expect(throttled.attributes["push.reason"] == "TooManyRequests" && throttled.attributes["request.retry"] == "0")
            #expect(throttled.parentSpanID == retried.first?.spanID)
            #expect(requests.contains { $0.attributes["request.retry"] == "1" && $0.parentSpanID == retried.first?.spanID })
            #expect(requests.allSatisfy { $0.attributes["push.platform"] == "test" })
            #expect(receiver.state.withLock { $0.serviceNames } == ["hub-under-test"])
            #expect(receiver.state.withLock { $0.contentTypes }.allSatisfy { $0.hasPrefix("application/x-protobuf") })
        }
    }

    /// Whether the receiver has the deliver span and the three page spans.
    static func exported(_ spans: [DecodedSpan]) -> Bool {
        spans.filter { $0.name == "audience.page" }.count >= 3 && spans.contains { $0.name == "notification.deliver" }
    }

    /// Registers 25 devices, sends to them in the caller's trace and checks the answer; returns the answered span id.
    static func sendTraced(_ api: APITestHarness, receiver: Receiver) async throws -> String {
        for index in 0..<25 {
            try await api.request(
                .put, "/demo/installations/d\(index)", key: "listen",
                body: APITestHarness.installationJSON("d\(index)", tags: ["all"]))
        }
        // The first device is throttled once: its batch (the first of page 0) retries.
        api.adapter.script("dev-d0", [DeliveryResult(.throttled, reason: "TooManyRequests"), .success])
        let sent = try await api.request(
            .post, "/demo/messages", key: "send",
            headers: SendEndpointTests.headers([
                "ServiceBusNotification-Tags": "all", "traceparent": "00-\(Self.callerTrace)-\(Self.callerSpan)-01",
                "tracestate": "vendor=opaque",
            ]),
            body: "{}")
        #expect(sent.status == .created)
        let id = try #require(sent.headers[HTTPField.Name("TrackingId")!])
        let answered = try #require(sent.headers[HTTPField.Name("traceparent")!])
        let parts = answered.split(separator: "-").map(String.init)
        try #require(parts.count == 4)
        #expect(parts.count == 4 && parts[0] == "00" && parts[1] == Self.callerTrace && parts[2] != Self.callerSpan)
        let record = try await api.waitForFinal(id)
        #expect(record.summary.count(of: .success) == 25)
        let details = try await api.request(.get, "/demo/messages/\(id)", key: "send")
        #expect(details.json?["traceId"] as? String == Self.callerTrace)
        // The trace headers went to no platform.
        #expect(api.adapter.received.allSatisfy { $0.headers.keys.allSatisfy { !["traceparent", "tracestate"].contains($0.lowercased()) } })

        for _ in 0..<1000 where !Self.exported(receiver.spans) {
            try await Task.sleep(for: .milliseconds(10))
        }
        return parts[2]
    }

    @Test func withoutTracingNoTraceparentIsAnsweredOrStored() async throws {
        try await APITestHarness.run { api in
            try await api.request(.put, "/demo/installations/a", key: "listen", body: APITestHarness.installationJSON("a"))
            let sent = try await api.request(
                .post, "/demo/messages", key: "send",
                headers: SendEndpointTests.headers(["traceparent": "00-\(Self.callerTrace)-\(Self.callerSpan)-01"]), body: "{}")
            #expect(sent.headers[HTTPField.Name("traceparent")!] == nil)
            let id = try #require(sent.headers[HTTPField.Name("TrackingId")!])
            _ = try await api.waitForFinal(id)
            let details = try await api.request(.get, "/demo/messages/\(id)", key: "send")
            #expect(details.json?["traceId"] == nil)
            #expect(api.adapter.received.first?.headers["traceparent"] == nil)
        }
    }

    @Test func tracingSettingsAreValidated() throws {
        let yaml = """
            observability:
              tracing: {endpoint: "collector:4318", batchSampleRatio: 2, sendSampleRatio: -0.5, extra: 1}
            hubs:
              demo:
                keys: [{name: k, rights: [Send], primaryKey: 0123456789abcdef0123}]
                adapters: [{type: recording, apiKey: recording-test-key}]
            """
        let root = ConfigurationNode.parse(yaml: yaml, file: "hub.yaml", environment: [:])
        #expect(throws: ConfigurationError.self) {
            try HubsConfiguration(root: root, registry: AdapterRegistry([RecordingAdapterFactory.self]))
        }
        let problems = root.problems
        #expect(problems.contains { $0.keyPath == "observability.tracing.endpoint" && $0.message.contains("OTLP/HTTP") })
        #expect(problems.contains { $0.keyPath == "observability.tracing.batchSampleRatio" && $0.message.contains("from 0 to 1") })
        #expect(problems.contains { $0.message.contains("unknown key 'extra'") })
        #expect(problems.contains { $0.keyPath == "observability.tracing.sendSampleRatio" && $0.message.contains("from 0 to 1") })

        let good = ConfigurationNode.parse(
            yaml: yaml.replacingOccurrences(
                of: #"{endpoint: "collector:4318", batchSampleRatio: 2, sendSampleRatio: -0.5, extra: 1}"#,
                with: "{endpoint: http://collector:4318/v1/traces}"),
            file: "hub.yaml", environment: [:])
        let configuration = try HubsConfiguration(root: good, registry: AdapterRegistry([RecordingAdapterFactory.self]))
        #expect(configuration.tracing?.endpoint.absoluteString == "http://collector:4318/v1/traces")
        #expect(configuration.tracing?.batchSampleRatio == 0.01)
        #expect(configuration.tracing?.sendSampleRatio == 1)
    }

    @Test func sendsWithoutACallersTraceAreSampledAtTheSendRatioAndCallersDecideTheirOwn() async throws {
        let receiver = Receiver()
        try await Self.withReceiver(receiver) { port in
            let adapters = [RecordingAdapter(limit: 2000)]
            var configuration = HubsConfiguration(server: ServerConfiguration(), hubs: [APITestHarness.settings(adapters: adapters)])
            configuration.tracing = TracingConfiguration(
                endpoint: URL(string: "http://127.0.0.1:\(port)/v1/traces")!, batchSampleRatio: 0, sendSampleRatio: 0)
            try await APITestHarness.run(configuration: configuration, adapters: adapters) { api in
                try await api.request(.put, "/demo/installations/a", key: "listen", body: APITestHarness.installationJSON("a"))
                // Three sends of their own (not traced at ratio 0), then one in a caller's sampled trace.
                for _ in 0..<3 {
                    let sent = try await api.request(.post, "/demo/messages", key: "send", headers: SendEndpointTests.headers(), body: "{}")
                    _ = try await api.waitForFinal(try #require(sent.headers[HTTPField.Name("TrackingId")!]))
                }
                let traced = try await api.request(
                    .post, "/demo/messages", key: "send",
                    headers: SendEndpointTests.headers(["traceparent": "00-\(Self.callerTrace)-\(Self.callerSpan)-01"]), body: "{}")
                _ = try await api.waitForFinal(try #require(traced.headers[HTTPField.Name("TrackingId")!]))
            }
            // The harness stops gracefully, which flushes the exporter: every span made has arrived.
            let spans = receiver.spans
            #expect(spans.contains { $0.name == "notification.accept" && $0.traceID == Self.callerTrace })
            #expect(spans.contains { $0.name == "platform.request" && $0.traceID == Self.callerTrace })
            #expect(spans.allSatisfy { $0.traceID == Self.callerTrace }, "only the caller's trace is exported")
        }
    }
}
