import ADM
import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Testing

/// The ADM plugin through the hub's REST API, built by the same composition root as `hub serve` (``HubRuntime``)
/// from the factory's settings: installations with `"platform": "adm"`, Azure's `AdmRegistrationDescription` and
/// `AdmTemplateRegistrationDescription`, and sends with `ServiceBusNotification-Format: adm`.
@Suite struct ADMHubAPITests {
    static let atom: HTTPFields = [.contentType: "application/atom+xml;type=entry;charset=utf-8"]

    func run(_ body: @Sendable (ADMHarness, any TestClientProtocol) async throws -> Void) async throws {
        try await ADMHarness.with { harness in
            try await HubAPITest.run(
                adapters: [AdapterSettings(factory: ADMAdapterFactory.self, settings: harness.settings())],
                logger: ADMHarness.logger
            ) { client in try await body(harness, client) }
        }
    }

    func put(_ client: some TestClientProtocol, _ id: String, handle: String, tags: [String] = []) async throws -> TestResponse {
        let tagList = tags.map { "\"\($0)\"" }.joined(separator: ",")
        return try await client.execute(
            uri: "/demo/installations/\(id)", method: .put,
            headers: [.authorization: HubAPITest.authorization("listen"), .contentType: "application/json", .accept: "application/json"],
            body: ByteBuffer(string: #"{"installationId":"\#(id)","platform":"adm","pushChannel":"\#(handle)","tags":[\#(tagList)]}"#))
    }

    func send(
        _ client: some TestClientProtocol, _ body: String, format: String = "adm", tags: String? = nil, query: String = ""
    ) async throws -> TestResponse {
        var headers: HTTPFields = [
            .authorization: HubAPITest.authorization("send"), .contentType: "application/json;charset=utf-8",
            .accept: "application/json", HTTPField.Name("ServiceBusNotification-Format")!: format,
        ]
        if let tags { headers[HTTPField.Name("ServiceBusNotification-Tags")!] = tags }
        return try await client.execute(uri: "/demo/messages/\(query)", method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    func waitUntil(_ condition: () async throws -> Bool) async throws {
        for _ in 0..<1000 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func installationsAndSendsReachADM() async throws {
        try await run { harness, client in
            #expect(try await put(client, "f1", handle: ADMHarness.registrationID("f1"), tags: ["news"]).status == .ok)
            #expect(try await put(client, "f2", handle: ADMHarness.registrationID("f2"), tags: ["news"]).status == .ok)
            let sent = try await send(client, #"{"data":{"n":"1"},"consolidationKey":"news"}"#, tags: "news", query: "?api-version=2015-01")
            #expect(sent.status == .created)
            try await waitUntil { harness.emulator.recorder.acceptedCount >= 2 }
            #expect(Set(harness.emulator.recorder.accepted.map(\.registrationID)) == [ADMHarness.registrationID("f1"), ADMHarness.registrationID("f2")])
            #expect(harness.emulator.recorder.accepted.allSatisfy { $0.data == ["n": "1"] && $0.consolidationKey == "news" })
        }
    }

    @Test func directSendsGoToTheRegistrationId() async throws {
        try await run { harness, client in
            let id = ADMHarness.registrationID("direct")
            let sent = try await client.execute(
                uri: "/demo/messages/?direct", method: .post,
                headers: [
                    .authorization: HubAPITest.authorization("send"), .contentType: "application/json",
                    HTTPField.Name("ServiceBusNotification-Format")!: "adm",
                    HTTPField.Name("ServiceBusNotification-DeviceHandle")!: id,
                ],
                body: ByteBuffer(string: #"{"data":{"k":"v"}}"#))
            #expect(sent.status == .created)
            try await waitUntil { harness.emulator.recorder.acceptedCount >= 1 }
            #expect(harness.emulator.recorder.accepted.map(\.registrationID) == [id])
        }
    }

    @Test func azureNativeRegistrationsAreCreatedListedAndReached() async throws {
        try await run { harness, client in
            // The native description as Azure's .NET SDK writes it (AdmRegistrationDescription, AdmRegistrationId).
            let id = "amzn1.adm-registration.v2.123"
            let native = RegistrationFixtures.entry(
                "<AdmRegistrationDescription \(RegistrationFixtures.connect)><Tags>tag1</Tags><AdmRegistrationId>\(id)</AdmRegistrationId></AdmRegistrationDescription>")
            var headers = Self.atom
            headers[.authorization] = HubAPITest.authorization("listen")
            let created = try await client.execute(uri: "/demo/registrations", method: .post, headers: headers, body: ByteBuffer(string: native))
            #expect(created.status == .ok, "\(String(buffer: created.body))")
            let text = String(buffer: created.body)
            #expect(text.contains("<AdmRegistrationDescription") && text.contains("<AdmRegistrationId>\(id)</AdmRegistrationId>"))
            let listed = try await client.execute(
                uri: "/demo/registrations?$filter=AdmRegistrationId%20eq%20'\(id)'", method: .get,
                headers: [.authorization: HubAPITest.authorization("listen")])
            #expect(listed.status == .ok)
            #expect(String(buffer: listed.body).contains("<AdmRegistrationId>\(id)</AdmRegistrationId>"))
            #expect(try await send(client, #"{"data":{"hello":"tag1"}}"#, tags: "tag1").status == .created)
            try await waitUntil { harness.emulator.recorder.acceptedCount >= 1 }
            #expect(harness.emulator.recorder.accepted.map(\.registrationID) == [id])
        }
    }

    @Test func azureTemplateRegistrationsRenderTheirBody() async throws {
        try await run { harness, client in
            let id = ADMHarness.registrationID("tpl")
            let template = RegistrationFixtures.entry(
                #"<AdmTemplateRegistrationDescription \#(RegistrationFixtures.connect)><Tags>tpl</Tags><AdmRegistrationId>\#(id)</AdmRegistrationId><BodyTemplate><![CDATA[{"data":{"message":"$(message)"}}]]></BodyTemplate><TemplateName>greeting</TemplateName></AdmTemplateRegistrationDescription>"#)
            var headers = Self.atom
            headers[.authorization] = HubAPITest.authorization("listen")
            let created = try await client.execute(uri: "/demo/registrations", method: .post, headers: headers, body: ByteBuffer(string: template))
            #expect(created.status == .ok, "\(String(buffer: created.body))")
            #expect(String(buffer: created.body).contains("<AdmTemplateRegistrationDescription"))
            #expect(try await send(client, #"{"message":"Hello"}"#, format: "template", tags: "tpl").status == .created)
            try await waitUntil { harness.emulator.recorder.acceptedCount >= 1 }
            #expect(harness.emulator.recorder.accepted.first?.data == ["message": "Hello"])
        }
    }

    @Test func admInstallationsAreListedAsAzureRegistrations() async throws {
        try await run { _, client in
            let id = ADMHarness.registrationID("listed")
            #expect(try await put(client, "listed", handle: id).status == .ok)
            let filter = "AdmRegistrationId eq '\(id)'".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let listed = try await client.execute(
                uri: "/demo/registrations?$filter=\(filter)", method: .get, headers: [.authorization: HubAPITest.authorization("listen")])
            #expect(listed.status == .ok)
            let text = String(buffer: listed.body)
            #expect(text.contains("<AdmRegistrationDescription") && text.contains(id))
        }
    }

    @Test func aRegistrationIdADMReplacedIsStoredOnTheInstallation() async throws {
        try await run { harness, client in
            let old = ADMHarness.registrationID("before")
            let new = ADMHarness.registrationID("after")
            harness.emulator.replace(old, with: new)
            #expect(try await put(client, "moving", handle: old, tags: ["m"]).status == .ok)
            #expect(try await send(client, #"{"data":{"k":"v"}}"#, tags: "m").status == .created)
            var stored = ""
            try await waitUntil {
                let answer = try await client.execute(
                    uri: "/demo/installations/moving", method: .get,
                    headers: [.authorization: HubAPITest.authorization("listen"), .accept: "application/json"])
                stored = (try? JSONValue(parsing: Array(answer.body.readableBytesView)))?.objectValue?["pushChannel"]?.stringValue ?? ""
                return stored == new
            }
            #expect(stored == new)
        }
    }

    @Test func badInputIsRefusedWithADMsRules() async throws {
        try await run { harness, client in
            let refused = try await put(client, "bad", handle: "not-a-registration-id")
            #expect(refused.status == .badRequest)
            #expect(String(buffer: refused.body).contains("InvalidPushChannel") && String(buffer: refused.body).contains(ADMAdapter.registrationIDRule))

            let wrongType = try await send(client, #"{"data":{"count":3}}"#)
            #expect(wrongType.status == .badRequest)
            #expect(String(buffer: wrongType.body).contains("data.count is a number; ADM data values must be strings"))

            let badExpiry = try await send(client, #"{"data":{},"expiresAfter":10}"#)
            #expect(badExpiry.status == .badRequest)
            #expect(String(buffer: badExpiry.body).contains("expiresAfter must be whole seconds from 60 to 2678400"))

            let large = try await send(client, #"{"data":{"x":""# + String(repeating: "y", count: 6200) + #""}}"#)
            #expect(large.status == .contentTooLarge)
            #expect(String(buffer: large.body).contains("PayloadTooLarge"))

            let badRegistration = RegistrationFixtures.entry(
                "<AdmRegistrationDescription \(RegistrationFixtures.connect)><AdmRegistrationId>nope</AdmRegistrationId></AdmRegistrationDescription>")
            var headers = Self.atom
            headers[.authorization] = HubAPITest.authorization("listen")
            let xml = try await client.execute(uri: "/demo/registrations", method: .post, headers: headers, body: ByteBuffer(string: badRegistration))
            #expect(xml.status == .badRequest)
            #expect(String(buffer: xml.body).contains(ADMAdapter.registrationIDRule))
            #expect(harness.emulator.recorder.acceptedCount == 0)
            #expect(harness.emulator.sendRequestCount == 0)
        }
    }
}
