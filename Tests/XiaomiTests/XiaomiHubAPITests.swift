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
import Xiaomi

/// The Xiaomi plugin through the hub's REST API, built by the same composition root as `hub serve` (``HubRuntime``)
/// from the factory's settings: installations with `"platform": "xiaomi"`, Azure's `XiaomiRegistrationDescription`
/// and `XiaomiTemplateRegistrationDescription`, and sends with `ServiceBusNotification-Format: xiaomi`.
@Suite struct XiaomiHubAPITests {
    static let atom: HTTPFields = [.contentType: "application/atom+xml;type=entry;charset=utf-8"]
    static let notification = #"{"title":"Hello","description":"World","payload":"p1"}"#

    func run(_ body: @Sendable (XiaomiHarness, any TestClientProtocol) async throws -> Void) async throws {
        try await XiaomiHarness.with { harness in
            try await HubAPITest.run(
                adapters: [AdapterSettings(factory: XiaomiAdapterFactory.self, settings: harness.settings())],
                logger: XiaomiHarness.logger
            ) { client in try await body(harness, client) }
        }
    }

    func put(_ client: some TestClientProtocol, _ id: String, handle: String, tags: [String] = []) async throws -> TestResponse {
        let tagList = tags.map { "\"\($0)\"" }.joined(separator: ",")
        return try await client.execute(
            uri: "/demo/installations/\(id)", method: .put,
            headers: [.authorization: HubAPITest.authorization("listen"), .contentType: "application/json", .accept: "application/json"],
            body: ByteBuffer(string: #"{"installationId":"\#(id)","platform":"xiaomi","pushChannel":"\#(handle)","tags":[\#(tagList)]}"#))
    }

    func send(
        _ client: some TestClientProtocol, _ body: String, format: String = "xiaomi", tags: String? = nil, query: String = "",
        handle: String? = nil
    ) async throws -> TestResponse {
        var headers: HTTPFields = [
            .authorization: HubAPITest.authorization("send"), .contentType: "application/json;charset=utf-8",
            .accept: "application/json", HTTPField.Name("ServiceBusNotification-Format")!: format,
        ]
        if let tags { headers[HTTPField.Name("ServiceBusNotification-Tags")!] = tags }
        if let handle { headers[HTTPField.Name("ServiceBusNotification-DeviceHandle")!] = handle }
        return try await client.execute(uri: "/demo/messages/\(query)", method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    func register(_ client: some TestClientProtocol, _ description: String) async throws -> TestResponse {
        var headers = Self.atom
        headers[.authorization] = HubAPITest.authorization("listen")
        return try await client.execute(
            uri: "/demo/registrations/?api-version=2015-01", method: .post, headers: headers,
            body: ByteBuffer(string: RegistrationFixtures.entry(description)))
    }

    /// The description element of an Atom entry, as text.
    static func description(_ response: TestResponse, _ element: String) -> String? {
        let text = String(buffer: response.body)
        guard let start = text.range(of: "<\(element) "), let end = text.range(of: "</\(element)>") else { return nil }
        return String(text[start.lowerBound..<end.upperBound])
    }

    /// The registration id an Atom answer names.
    static func registrationID(_ response: TestResponse) -> String? {
        let text = String(buffer: response.body)
        guard let start = text.range(of: "<RegistrationId>"), let end = text.range(of: "</RegistrationId>") else { return nil }
        return String(text[start.upperBound..<end.lowerBound])
    }

    func waitUntil(_ condition: () async throws -> Bool) async throws {
        for _ in 0..<1000 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func installationsAndSendsReachMiPushInOneRequest() async throws {
        try await run { harness, client in
            #expect(try await put(client, "x1", handle: XiaomiHarness.registrationID("x1"), tags: ["news"]).status == .ok)
            #expect(try await put(client, "x2", handle: XiaomiHarness.registrationID("x2"), tags: ["news"]).status == .ok)
            let sent = try await send(client, Self.notification, tags: "news", query: "?api-version=2015-01")
            #expect(sent.status == .created)
            try await waitUntil { harness.emulator.recorder.acceptedCount >= 2 }
            #expect(Set(harness.emulator.recorder.accepted.map(\.registrationID)) == [XiaomiHarness.registrationID("x1"), XiaomiHarness.registrationID("x2")])
            #expect(harness.emulator.batchSizes == [2])
        }
    }

    @Test func directSendsGoToTheRegistrationId() async throws {
        try await run { harness, client in
            let id = XiaomiHarness.registrationID("direct")
            #expect(try await send(client, Self.notification, query: "?direct", handle: id).status == .created)
            try await waitUntil { harness.emulator.recorder.acceptedCount >= 1 }
            #expect(harness.emulator.recorder.accepted.map(\.registrationID) == [id])
        }
    }

    @Test func azureNativeRegistrationsAreCreatedReadBackListedAndReached() async throws {
        try await run { harness, client in
            // The native description as Azure's .NET SDK writes it (XiaomiRegistrationDescription, XiaomiRegistrationId).
            let id = XiaomiHarness.registrationID("native")
            let created = try await register(
                client,
                "<XiaomiRegistrationDescription \(RegistrationFixtures.connect)><Tags>tag1</Tags><XiaomiRegistrationId>\(id)</XiaomiRegistrationId></XiaomiRegistrationDescription>")
            #expect(created.status == .ok, "\(String(buffer: created.body))")
            let written = try #require(Self.description(created, "XiaomiRegistrationDescription"))
            #expect(written.contains("<Tags>tag1</Tags><XiaomiRegistrationId>\(id)</XiaomiRegistrationId>"))
            let registration = try #require(Self.registrationID(created))
            let read = try await client.execute(
                uri: "/demo/registrations/\(registration)", method: .get, headers: [.authorization: HubAPITest.authorization("listen")])
            #expect(read.status == .ok)
            #expect(Self.description(read, "XiaomiRegistrationDescription") == written)
            let filter = "XiaomiRegistrationId eq '\(id)'".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let listed = try await client.execute(
                uri: "/demo/registrations?$filter=\(filter)", method: .get, headers: [.authorization: HubAPITest.authorization("listen")])
            #expect(listed.status == .ok)
            #expect(String(buffer: listed.body).contains("<XiaomiRegistrationId>\(id)</XiaomiRegistrationId>"))
            #expect(try await send(client, Self.notification, tags: "tag1").status == .created)
            try await waitUntil { harness.emulator.recorder.acceptedCount >= 1 }
            #expect(harness.emulator.recorder.accepted.map(\.registrationID) == [id])
        }
    }

    @Test func azureTemplateRegistrationsAreReadBackAndRenderTheirBody() async throws {
        try await run { harness, client in
            let id = XiaomiHarness.registrationID("tpl")
            let body = #"{"title":"$(title)","description":"$(message)","payload":"$(message)"}"#
            let created = try await register(
                client,
                #"<XiaomiTemplateRegistrationDescription \#(RegistrationFixtures.connect)><Tags>tpl</Tags><XiaomiRegistrationId>\#(id)</XiaomiRegistrationId><BodyTemplate><![CDATA[\#(body)]]></BodyTemplate><TemplateName>greeting</TemplateName></XiaomiTemplateRegistrationDescription>"#)
            #expect(created.status == .ok, "\(String(buffer: created.body))")
            let written = try #require(Self.description(created, "XiaomiTemplateRegistrationDescription"))
            // Azure's order: the handle, then BodyTemplate and TemplateName.
            #expect(written.contains(
                #"<XiaomiRegistrationId>\#(id)</XiaomiRegistrationId><BodyTemplate><![CDATA[\#(body)]]></BodyTemplate><TemplateName>greeting</TemplateName>"#))
            let registration = try #require(Self.registrationID(created))
            let read = try await client.execute(
                uri: "/demo/registrations/\(registration)", method: .get, headers: [.authorization: HubAPITest.authorization("listen")])
            #expect(Self.description(read, "XiaomiTemplateRegistrationDescription") == written)
            #expect(try await send(client, #"{"title":"Hi","message":"Hello"}"#, format: "template", tags: "tpl").status == .created)
            try await waitUntil { harness.emulator.recorder.acceptedCount >= 1 }
            let fields = try #require(harness.emulator.recorder.accepted.first?.fields)
            #expect(fields["title"] == "Hi" && fields["description"] == "Hello" && fields["payload"] == "Hello")
        }
    }

    @Test func xiaomiInstallationsAreListedAsAzureRegistrations() async throws {
        try await run { _, client in
            let id = XiaomiHarness.registrationID("listed")
            #expect(try await put(client, "listed", handle: id).status == .ok)
            let filter = "XiaomiRegistrationId eq '\(id)'".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let listed = try await client.execute(
                uri: "/demo/registrations?$filter=\(filter)", method: .get, headers: [.authorization: HubAPITest.authorization("listen")])
            #expect(listed.status == .ok)
            let text = String(buffer: listed.body)
            #expect(text.contains("<XiaomiRegistrationDescription") && text.contains(id))
        }
    }

    @Test func badInputIsRefusedWithMiPushsRules() async throws {
        try await run { harness, client in
            let refused = try await put(client, "bad", handle: "has,comma-0123456789abcdef")
            #expect(refused.status == .badRequest)
            #expect(String(buffer: refused.body).contains("InvalidPushChannel") && String(buffer: refused.body).contains(XiaomiAdapter.registrationIDRule))

            let noTitle = try await send(client, #"{"description":"d"}"#)
            #expect(noTitle.status == .badRequest)
            #expect(String(buffer: noTitle.body).contains("a notification message (pass_through 0) needs title"))

            let wrongType = try await send(client, #"{"title":"t","description":"d","notify_type":"loud"}"#)
            #expect(wrongType.status == .badRequest)
            #expect(String(buffer: wrongType.body).contains("notify_type must be -1"))

            let target = try await send(client, #"{"title":"t","description":"d","registration_id":"x"}"#)
            #expect(target.status == .badRequest)
            #expect(String(buffer: target.body).contains("registration_id is set by the hub"))

            let large = try await send(client, #"{"pass_through":1,"payload":""# + String(repeating: "y", count: 4200) + #""}"#)
            #expect(large.status == .contentTooLarge)
            #expect(String(buffer: large.body).contains("PayloadTooLarge"))

            let badRegistration = try await register(
                client,
                "<XiaomiRegistrationDescription \(RegistrationFixtures.connect)><XiaomiRegistrationId>nope</XiaomiRegistrationId></XiaomiRegistrationDescription>")
            #expect(badRegistration.status == .badRequest)
            #expect(String(buffer: badRegistration.body).contains(XiaomiAdapter.registrationIDRule))
            #expect(harness.emulator.recorder.acceptedCount == 0)
            #expect(harness.emulator.sendRequestCount == 0)
        }
    }
}
