import Foundation
import HMS
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import ServiceLifecycle
import Testing

/// The HMS plugin through the hub's REST API, built by the same composition root as `hub serve` (``HubRuntime``)
/// from the factory's settings: installations with `"platform": "hms"`, sends with
/// `ServiceBusNotification-Format: hms`, and no Azure registration description.
@Suite struct HMSHubAPITests {
    static func authorization(_ name: String) -> String { HubAPITest.authorization(name) }

    func run(_ body: @Sendable (HMSHarness, any TestClientProtocol) async throws -> Void) async throws {
        try await HMSHarness.with { harness in
            try await HubAPITest.run(
                adapters: [AdapterSettings(factory: HMSAdapterFactory.self, settings: harness.settings())],
                logger: HMSHarness.logger
            ) { client in try await body(harness, client) }
        }
    }

    func put(_ client: some TestClientProtocol, _ id: String, handle: String, tags: [String] = []) async throws -> TestResponse {
        let tagList = tags.map { "\"\($0)\"" }.joined(separator: ",")
        return try await client.execute(
            uri: "/demo/installations/\(id)", method: .put,
            headers: [.authorization: Self.authorization("listen"), .contentType: "application/json", .accept: "application/json"],
            body: ByteBuffer(string: #"{"installationId":"\#(id)","platform":"hms","pushChannel":"\#(handle)","tags":[\#(tagList)]}"#))
    }

    @Test func installationsAndSendsReachPushKit() async throws {
        try await run { harness, client in
            #expect(try await put(client, "p1", handle: HMSHarness.token("p1"), tags: ["news"]).status == .ok)
            #expect(try await put(client, "p2", handle: HMSHarness.token("p2"), tags: ["news"]).status == .ok)
            let sent = try await client.execute(
                uri: "/demo/messages/?api-version=2015-01", method: .post,
                headers: [
                    .authorization: Self.authorization("send"), .contentType: "application/json;charset=utf-8",
                    HTTPField.Name("ServiceBusNotification-Format")!: "hms",
                    HTTPField.Name("ServiceBusNotification-Tags")!: "news",
                ],
                body: ByteBuffer(string: #"{"message":{"data":"{\"n\":1}"}}"#))
            #expect(sent.status == .created)
            for _ in 0..<1000 where harness.emulator.recorder.acceptedCount < 2 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(Set(harness.emulator.recorder.accepted.map(\.token)) == [HMSHarness.token("p1"), HMSHarness.token("p2")])
            #expect(harness.emulator.batchSizes == [2])
        }
    }

    @Test func directSendsGoToTheHandle() async throws {
        try await run { harness, client in
            let token = HMSHarness.token("direct")
            let sent = try await client.execute(
                uri: "/demo/messages/?direct", method: .post,
                headers: [
                    .authorization: Self.authorization("send"), .contentType: "application/json",
                    HTTPField.Name("ServiceBusNotification-Format")!: "hms",
                    HTTPField.Name("ServiceBusNotification-DeviceHandle")!: token,
                ],
                body: ByteBuffer(string: #"{"message":{"notification":{"title":"t","body":"b"}}}"#))
            #expect(sent.status == .created)
            for _ in 0..<1000 where harness.emulator.recorder.acceptedCount < 1 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(harness.emulator.recorder.accepted.map(\.token) == [token])
        }
    }

    @Test func malformedHandlesAndPayloadsAreRefusedWithPushKitsRules() async throws {
        try await run { harness, client in
            let refused = try await put(client, "bad", handle: "not a push token")
            #expect(refused.status == .badRequest)
            let text = String(buffer: refused.body)
            #expect(text.contains("InvalidPushChannel") && text.contains(HMSAdapter.tokenRule))
            let payload = try await client.execute(
                uri: "/demo/messages/", method: .post,
                headers: [
                    .authorization: Self.authorization("send"), .contentType: "application/json",
                    HTTPField.Name("ServiceBusNotification-Format")!: "hms", .accept: "application/json",
                ],
                body: ByteBuffer(string: #"{"message":{"data":{"not":"a string"}}}"#))
            #expect(payload.status == .badRequest)
            #expect(String(buffer: payload.body).contains("message.data must be a string"))
            #expect(harness.emulator.recorder.acceptedCount == 0)
        }
    }

    @Test func hmsInstallationsHaveNoAzureRegistration() async throws {
        try await run { _, client in
            let token = HMSHarness.token("r1")
            #expect(try await put(client, "r1", handle: token).status == .ok)
            let listed = try await client.execute(
                uri: "/demo/registrations?$filter=ChannelUri%20eq%20'\(token)'", method: .get,
                headers: [.authorization: Self.authorization("listen")])
            #expect(listed.status == .ok)
            #expect(!String(buffer: listed.body).contains("<entry"))
            let apple = RegistrationFixtures.entry(
                "<AppleRegistrationDescription \(RegistrationFixtures.connect)><DeviceToken>0F1E</DeviceToken></AppleRegistrationDescription>")
            let created = try await client.execute(
                uri: "/demo/registrations", method: .post,
                headers: [.authorization: Self.authorization("listen"), .contentType: "application/atom+xml;type=entry;charset=utf-8"],
                body: ByteBuffer(string: apple))
            #expect(created.status == .badRequest)
        }
    }
}
