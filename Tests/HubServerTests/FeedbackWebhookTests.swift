import AsyncHTTPClient
import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NotificationHub
import Synchronization
import Testing

/// The feedback webhook receives every failed device once, in batches, after retrying a failing endpoint.
@Suite struct FeedbackWebhookTests {
    /// A real HTTP endpoint that fails its first `failFirst` requests, then records batches.
    final class Receiver: Sendable {
        let state = Mutex((calls: 0, bodies: [Data]()))
        let failFirst: Int
        init(failFirst: Int) { self.failFirst = failFirst }

        var batches: [[String: Any]] {
            state.withLock { $0.bodies }.compactMap { (try? JSONSerialization.jsonObject(with: $0)) as? [String: Any] }
        }
        var failures: [[String: Any]] { batches.flatMap { $0["failures"] as? [[String: Any]] ?? [] } }
        var calls: Int { state.withLock { $0.calls } }

        func handle(_ body: ByteBuffer, authorization: String?) -> HTTPResponse.Status {
            state.withLock { state in
                state.calls += 1
                if state.calls <= failFirst { return .serviceUnavailable }
                guard authorization == "Bearer hook-secret" else { return .unauthorized }
                state.bodies.append(Data(body.readableBytesView))
                return .noContent
            }
        }
    }

    /// Runs a receiver on a free port and passes its URL and a client of its own. The client is shut down before the
    /// receiver stops: a server's graceful shutdown waits for its clients' idle keep-alive connections to close.
    static func withReceiver<T: Sendable>(
        _ receiver: Receiver, _ body: @Sendable (URL, HTTPClient) async throws -> T
    ) async throws -> T {
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            let buffer = try await request.body.collect(upTo: 1 << 20)
            return Response(status: receiver.handle(buffer, authorization: request.headers[.authorization]))
        }
        return try await LoopbackServer.run(router) { port in
            let url = URL(string: "http://127.0.0.1:\(port)/hook")!
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
            let result: T
            do {
                result = try await body(url, client)
            } catch {
                try? await client.shutdown()
                throw error
            }
            try await client.shutdown()
            return result
        }
    }

    @Test func failuresArePostedOnceInOrderAfterRetries() async throws {
        let receiver = Receiver(failFirst: 2)
        try await Self.withReceiver(receiver) { url, client in
            let settings = FeedbackWebhookConfiguration(
                url: url, headers: ["Authorization": "Bearer hook-secret"], batchSize: 2, pollIntervalSeconds: 0.02,
                maximumBackoffSeconds: 0.05)
            try await APITestHarness.run { api in
                let webhook = FeedbackWebhook(hub: api.hub, settings: settings, client: client, logger: Logger.forTest("test"))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await webhook.run() }
                    for id in ["a", "b", "c", "d", "e"] {
                        try await api.request(.put, "/demo/installations/\(id)", key: "listen", body: APITestHarness.installationJSON(id))
                    }
                    for handle in ["dev-b", "dev-c", "dev-e"] {
                        api.adapter.script(handle, [DeliveryResult(.badChannel, reason: "BadDeviceToken")])
                    }
                    let sent = try await api.request(.post, "/demo/messages", key: "send", headers: SendEndpointTests.headers(), body: "{}")
                    let id = try #require(sent.headers[HTTPField.Name("TrackingId")!])
                    _ = try await api.waitForFinal(id)
                    for _ in 0..<3000 where receiver.failures.count < 3 { try await Task.sleep(for: .milliseconds(10)) }
                    #expect(receiver.calls >= 4)  // two refused, then two batches (batchSize 2)
                    let failures = receiver.failures
                    #expect(failures.compactMap { $0["installationId"] as? String }.sorted() == ["b", "c", "e"])
                    #expect(failures.allSatisfy { $0["notificationId"] as? String == id && $0["outcome"] as? String == "BadChannel" })
                    #expect(receiver.batches.allSatisfy { $0["hub"] as? String == "demo" && ($0["failures"] as? [Any])?.count ?? 0 <= 2 })

                    // A later failure is posted alone: nothing is repeated.
                    api.adapter.script("dev-a", [DeliveryResult(.wrongChannel, reason: "SenderIdMismatch")])
                    let again = try await api.request(.post, "/demo/messages", key: "send", headers: SendEndpointTests.headers(), body: "{}")
                    _ = try await api.waitForFinal(try #require(again.headers[HTTPField.Name("TrackingId")!]))
                    for _ in 0..<3000 where receiver.failures.count < 4 { try await Task.sleep(for: .milliseconds(10)) }
                    try await Task.sleep(for: .milliseconds(100))
                    #expect(receiver.failures.count == 4)
                    #expect(receiver.failures.last?["outcome"] as? String == "WrongChannel")
                    group.cancelAll()
                }
            }
        }
    }

    @Test func webhookSettingsAreValidated() throws {
        let yaml = """
            hubs:
              demo:
                keys: [{name: k, rights: [Send], primaryKey: 0123456789abcdef0123}]
                adapters: [{type: recording}]
                feedback:
                  webhook: {url: "ftp://x", batchSize: 0, extra: 1}
            """
        let root = ConfigurationNode.parse(yaml: yaml, file: "hub.yaml", environment: [:])
        #expect(throws: ConfigurationError.self) {
            try HubsConfiguration(root: root, registry: AdapterRegistry([RecordingAdapterFactory.self]))
        }
        let text = root.problems.map(\.description).joined(separator: "\n")
        #expect(text.contains("hubs.demo.feedback.webhook.url"))
        #expect(text.contains("hubs.demo.feedback.webhook.batchSize"))
        #expect(text.contains("unknown key 'extra'"))
    }
}
