import Baidu
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

/// The Baidu plugin through the hub's REST API, built by the same composition root as `hub serve` (``HubRuntime``)
/// from the factory's settings: installations with `"platform": "baidu"` and Azure's `{userId}-{channelId}` push
/// channel, Azure's `BaiduRegistrationDescription` and `BaiduTemplateRegistrationDescription`, and sends with
/// `ServiceBusNotification-Format: baidu`.
@Suite struct BaiduHubAPITests {
    static let atom: HTTPFields = [.contentType: "application/atom+xml;type=entry;charset=utf-8"]
    static let userID = "1061541468263391234"

    func run(_ body: @Sendable (BaiduHarness, any TestClientProtocol) async throws -> Void) async throws {
        try await BaiduHarness.with { harness in
            try await HubAPITest.run(
                adapters: [AdapterSettings(factory: BaiduAdapterFactory.self, settings: harness.settings())],
                logger: BaiduHarness.logger
            ) { client in try await body(harness, client) }
        }
    }

    func put(_ client: some TestClientProtocol, _ id: String, handle: String, tags: [String] = []) async throws -> TestResponse {
        let tagList = tags.map { "\"\($0)\"" }.joined(separator: ",")
        return try await client.execute(
            uri: "/demo/installations/\(id)", method: .put,
            headers: [.authorization: HubAPITest.authorization("listen"), .contentType: "application/json", .accept: "application/json"],
            body: ByteBuffer(string: #"{"installationId":"\#(id)","platform":"baidu","pushChannel":"\#(handle)","tags":[\#(tagList)]}"#))
    }

    /// A send as Azure's .NET SDK makes it: `BaiduNotification` posts the message as the body with
    /// `Content-Type: application/x-www-form-urlencoded`, and its `MessageType` as `X-Baidu-Message-Type`.
    func send(
        _ client: some TestClientProtocol, _ body: String, format: String = "baidu", tags: String? = nil, messageType: String? = "1",
        contentType: String = "application/x-www-form-urlencoded"
    ) async throws -> TestResponse {
        var headers: HTTPFields = [
            .authorization: HubAPITest.authorization("send"), .contentType: contentType,
            HTTPField.Name("ServiceBusNotification-Format")!: format,
        ]
        if let tags { headers[HTTPField.Name("ServiceBusNotification-Tags")!] = tags }
        if let messageType { headers[HTTPField.Name("X-Baidu-Message-Type")!] = messageType }
        return try await client.execute(uri: "/demo/messages/?api-version=2017-04", method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    func register(_ client: some TestClientProtocol, _ description: String) async throws -> TestResponse {
        var headers = Self.atom
        headers[.authorization] = HubAPITest.authorization("listen")
        return try await client.execute(
            uri: "/demo/registrations?api-version=2017-04", method: .post, headers: headers,
            body: ByteBuffer(string: RegistrationFixtures.entry(description)))
    }

    /// The description element of an answer, from `<…RegistrationDescription` to its end, without the fields the
    /// hub assigns (ETag, ExpirationTime, RegistrationId).
    static func description(in text: String, element: String) -> String? {
        guard let start = text.range(of: "<\(element) "), let end = text.range(of: "</\(element)>") else { return nil }
        var description = String(text[start.lowerBound..<end.upperBound])
        for assigned in ["ETag", "ExpirationTime", "RegistrationId"] {
            if let open = description.range(of: "<\(assigned)>"), let close = description.range(of: "</\(assigned)>") {
                description.removeSubrange(open.lowerBound..<close.upperBound)
            }
        }
        return description
    }

    static func registrationID(in text: String) -> String? {
        guard let start = text.range(of: "<RegistrationId>"), let end = text.range(of: "</RegistrationId>") else { return nil }
        return String(text[start.upperBound..<end.lowerBound])
    }

    func waitUntil(_ condition: () async throws -> Bool) async throws {
        for _ in 0..<1000 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func installationsAndSendsReachBaidu() async throws {
        try await run { harness, client in
            #expect(try await put(client, "b1", handle: BaiduHarness.handle(1), tags: ["news"]).status == .ok)
            #expect(try await put(client, "b2", handle: BaiduHarness.handle(2), tags: ["news"]).status == .ok)
            let sent = try await send(client, #"{"title":"Title","description":"Description"}"#, tags: "news")
            #expect(sent.status == .created, "\(String(buffer: sent.body))")
            try await waitUntil { harness.emulator.recorder.acceptedCount >= 2 }
            #expect(Set(harness.emulator.recorder.accepted.map(\.channelID)) == [BaiduHarness.channelID(1), BaiduHarness.channelID(2)])
            #expect(harness.emulator.recorder.accepted.allSatisfy { $0.messageType == 1 && $0.message == #"{"title":"Title","description":"Description"}"# })
        }
    }

    @Test func directSendsGoToTheChannel() async throws {
        try await run { harness, client in
            let sent = try await client.execute(
                uri: "/demo/messages/?direct", method: .post,
                headers: [
                    .authorization: HubAPITest.authorization("send"), .contentType: "application/json",
                    HTTPField.Name("ServiceBusNotification-Format")!: "baidu",
                    HTTPField.Name("ServiceBusNotification-DeviceHandle")!: BaiduHarness.handle(7),
                ],
                body: ByteBuffer(string: #"{"k":"v"}"#))
            #expect(sent.status == .created)
            try await waitUntil { harness.emulator.recorder.acceptedCount >= 1 }
            #expect(harness.emulator.recorder.accepted.map(\.channelID) == [BaiduHarness.channelID(7)])
            #expect(harness.emulator.recorder.accepted.first?.messageType == 0)
        }
    }

    /// `SendDirectNotificationAsync(notification, handles)` as the .NET SDK sends it: a `multipart/mixed` body with
    /// the message and the handles, the message type as a request header.
    @Test func batchDirectSendsReachEveryHandle() async throws {
        try await run { harness, client in
            let boundary = "nh-batch-multipart-boundary"
            let body = [
                "--\(boundary)", "Content-Type: application/x-www-form-urlencoded", "Content-Disposition: inline; name=notification",
                "", #"{"title":"Batch","description":"To two"}"#,
                "--\(boundary)", "Content-Type: application/json; charset=utf-8", "Content-Disposition: inline; name=devices",
                "", #"["\#(BaiduHarness.handle(11))","\#(BaiduHarness.handle(12))"]"#, "--\(boundary)--", "",
            ].joined(separator: "\r\n")
            let sent = try await client.execute(
                uri: "/demo/messages/$batch?direct", method: .post,
                headers: [
                    .authorization: HubAPITest.authorization("send"), .contentType: #"multipart/mixed; boundary="\#(boundary)""#,
                    HTTPField.Name("ServiceBusNotification-Format")!: "baidu", HTTPField.Name("X-Baidu-Message-Type")!: "1",
                ],
                body: ByteBuffer(string: body))
            #expect(sent.status == .created, "\(String(buffer: sent.body))")
            try await waitUntil { harness.emulator.recorder.acceptedCount >= 2 }
            #expect(Set(harness.emulator.recorder.accepted.map(\.channelID)) == [BaiduHarness.channelID(11), BaiduHarness.channelID(12)])
            #expect(harness.emulator.recorder.accepted.allSatisfy { $0.messageType == 1 && $0.message == #"{"title":"Batch","description":"To two"}"# })
        }
    }

    @Test func azureNativeRegistrationsAreCreatedReadBackIdenticallyFilteredAndReached() async throws {
        try await run { harness, client in
            // The native description as Azure's .NET SDK writes it (BaiduUserId, then BaiduChannelId).
            let channel = BaiduHarness.channelID(3)
            let native =
                "<BaiduRegistrationDescription \(RegistrationFixtures.connect)><Tags>tag1</Tags><BaiduUserId>\(Self.userID)</BaiduUserId><BaiduChannelId>\(channel)</BaiduChannelId></BaiduRegistrationDescription>"
            let created = try await register(client, native)
            #expect(created.status == .ok, "\(String(buffer: created.body))")
            let text = String(buffer: created.body)
            let expected = #"<BaiduRegistrationDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:i="http://www.w3.org/2001/XMLSchema-instance"><Tags>tag1</Tags><BaiduUserId>\#(Self.userID)</BaiduUserId><BaiduChannelId>\#(channel)</BaiduChannelId></BaiduRegistrationDescription>"#
            #expect(Self.description(in: text, element: "BaiduRegistrationDescription") == expected)
            let id = try #require(Self.registrationID(in: text))
            let read = try await client.execute(
                uri: "/demo/registrations/\(id)", method: .get, headers: [.authorization: HubAPITest.authorization("listen")])
            #expect(Self.description(in: String(buffer: read.body), element: "BaiduRegistrationDescription") == expected)
            let filter = "BaiduUserId eq '\(Self.userID)' and BaiduChannelId eq '\(channel)'"
                .addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let listed = try await client.execute(
                uri: "/demo/registrations?$filter=\(filter)", method: .get, headers: [.authorization: HubAPITest.authorization("listen")])
            #expect(listed.status == .ok)
            #expect(String(buffer: listed.body).contains("<BaiduChannelId>\(channel)</BaiduChannelId>"))
            #expect(try await send(client, #"{"title":"t","description":"to tag1"}"#, tags: "tag1").status == .created)
            try await waitUntil { harness.emulator.recorder.acceptedCount >= 1 }
            #expect(harness.emulator.recorder.accepted.map(\.channelID) == [channel])
        }
    }

    @Test func azureTemplateRegistrationsAreReadBackIdenticallyAndRenderTheirBody() async throws {
        try await run { harness, client in
            let channel = BaiduHarness.channelID(4)
            let template =
                #"<BaiduTemplateRegistrationDescription \#(RegistrationFixtures.connect)><Tags>tpl</Tags><BaiduUserId>\#(Self.userID)</BaiduUserId><BaiduChannelId>\#(channel)</BaiduChannelId><BodyTemplate><![CDATA[{"title":"$(title)","description":"$(message)"}]]></BodyTemplate><TemplateName>greeting</TemplateName><MessageType>1</MessageType></BaiduTemplateRegistrationDescription>"#
            let created = try await register(client, template)
            #expect(created.status == .ok, "\(String(buffer: created.body))")
            let expected = #"<BaiduTemplateRegistrationDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:i="http://www.w3.org/2001/XMLSchema-instance"><Tags>tpl</Tags><BaiduUserId>\#(Self.userID)</BaiduUserId><BaiduChannelId>\#(channel)</BaiduChannelId><BodyTemplate><![CDATA[{"title":"$(title)","description":"$(message)"}]]></BodyTemplate><TemplateName>greeting</TemplateName><MessageType>1</MessageType></BaiduTemplateRegistrationDescription>"#
            #expect(Self.description(in: String(buffer: created.body), element: "BaiduTemplateRegistrationDescription") == expected)
            let sent = try await send(client, #"{"title":"Hi","message":"Hello"}"#, format: "template", tags: "tpl", messageType: nil, contentType: "application/json")
            #expect(sent.status == .created)
            try await waitUntil { harness.emulator.recorder.acceptedCount >= 1 }
            let received = try #require(harness.emulator.recorder.accepted.first)
            #expect(received.message == #"{"title":"Hi","description":"Hello"}"# && received.messageType == 1)
        }
    }

    @Test func baiduInstallationsAreListedAsAzureRegistrations() async throws {
        try await run { _, client in
            // Azure's BaiduInstallation writes the push channel as {userId}-{channelId}.
            #expect(try await put(client, "listed", handle: BaiduHarness.handle(5)).status == .ok)
            let filter = "BaiduUserId eq '10615414682633915' and BaiduChannelId eq '\(BaiduHarness.channelID(5))'"
                .addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let listed = try await client.execute(
                uri: "/demo/registrations?$filter=\(filter)", method: .get, headers: [.authorization: HubAPITest.authorization("listen")])
            #expect(listed.status == .ok)
            let text = String(buffer: listed.body)
            #expect(text.contains("<BaiduRegistrationDescription"))
            #expect(text.contains("<BaiduUserId>10615414682633915</BaiduUserId><BaiduChannelId>\(BaiduHarness.channelID(5))</BaiduChannelId>"))
            // A user id that could not have been registered (it holds the separator) matches nothing.
            let impossible = "BaiduUserId eq '10615414682633915-x' and BaiduChannelId eq '\(BaiduHarness.channelID(5))'"
                .addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let none = try await client.execute(
                uri: "/demo/registrations?$filter=\(impossible)", method: .get, headers: [.authorization: HubAPITest.authorization("listen")])
            #expect(none.status == .ok)
            #expect(!String(buffer: none.body).contains("<entry"))
            // One element alone is not a filter of this format.
            let half = "BaiduUserId eq '10615414682633915'".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let refused = try await client.execute(
                uri: "/demo/registrations?$filter=\(half)", method: .get, headers: [.authorization: HubAPITest.authorization("listen")])
            #expect(refused.status == .badRequest)
            #expect(String(buffer: refused.body).contains("BaiduUserId eq '…' and BaiduChannelId eq '…'"))
        }
    }

    @Test func badInputIsRefusedWithBaidusRules() async throws {
        try await run { harness, client in
            let refused = try await put(client, "bad", handle: BaiduHarness.channelID(1))
            #expect(refused.status == .badRequest)
            #expect(String(buffer: refused.body).contains("InvalidPushChannel") && String(buffer: refused.body).contains(BaiduAdapter.channelRule))

            let noDescription = try await send(client, #"{"title":"only a title"}"#)
            #expect(noDescription.status == .badRequest)
            #expect(String(buffer: noDescription.body).contains(#"needs "description""#))

            let badType = try await send(client, #"{"description":"d"}"#, messageType: "7")
            #expect(badType.status == .badRequest)
            #expect(String(buffer: badType.body).contains("X-Baidu-Message-Type must be 0"))

            let large = try await send(client, #"{"description":""# + String(repeating: "y", count: 4100) + #""}"#)
            #expect(large.status == .contentTooLarge)

            // A user id holding '-' would not read back: Azure splits the handle at its first '-'.
            let dashed = try await register(
                client,
                "<BaiduRegistrationDescription \(RegistrationFixtures.connect)><BaiduUserId>a-b</BaiduUserId><BaiduChannelId>123</BaiduChannelId></BaiduRegistrationDescription>")
            #expect(dashed.status == .badRequest)
            #expect(String(buffer: dashed.body).contains("&lt;BaiduUserId&gt; must not hold '-'"))
            let letters = try await register(
                client,
                "<BaiduRegistrationDescription \(RegistrationFixtures.connect)><BaiduUserId>u</BaiduUserId><BaiduChannelId>abc</BaiduChannelId></BaiduRegistrationDescription>")
            #expect(letters.status == .badRequest)
            #expect(String(buffer: letters.body).contains(BaiduAdapter.channelRule))
            let badMessageType = try await register(
                client,
                #"<BaiduTemplateRegistrationDescription \#(RegistrationFixtures.connect)><BaiduUserId>u</BaiduUserId><BaiduChannelId>1</BaiduChannelId><BodyTemplate>{}</BodyTemplate><MessageType>3</MessageType></BaiduTemplateRegistrationDescription>"#)
            #expect(badMessageType.status == .badRequest)
            #expect(String(buffer: badMessageType.body).contains("&lt;MessageType&gt; must be 0, 1 (X-Baidu-Message-Type)"))
            #expect(harness.emulator.recorder.acceptedCount == 0)
            #expect(harness.emulator.sendRequestCount == 0)
        }
    }
}
