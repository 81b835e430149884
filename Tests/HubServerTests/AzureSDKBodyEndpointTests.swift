import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import HummingbirdTesting
import NIOCore
@testable import NotificationHub
import Testing

/// The bodies Azure's .NET SDK sends and reads, end to end through the REST API.
@Suite struct AzureSDKBodyEndpointTests {
    static func run<T: Sendable>(_ body: @Sendable (APITestHarness) async throws -> T) async throws -> T {
        try await APITestHarness.run(adapters: [RecordingAdapter(platform: .apns, format: .apple)]) { try await body($0) }
    }

    @Test func anInstallationAsTheSDKWritesItIsStoredAndReadBackAsAzureAnswers() async throws {
        try await Self.run { api in
            let body = #"""
                {"installationId":"sdk-1","userId":null,"pushChannel":"dev-1","pushChannelExpired":null,"platform":"APNS",
                 "expirationTime":"2099-12-01T10:00:00.1234567Z","tags":["tag1"],"pushVariables":{"var1":"value1"},
                 "templates":{"Template Name":{"body":"{\"aps\":{\"alert\":\"$(var1)\"}}","headers":null,"expiry":null,"tags":null}}}
                """#
            let put = try await api.request(.put, "/demo/installations/sdk-1?api-version=2017-04", key: "listen", body: body)
            #expect(put.status == .ok)
            let json = try #require(try await api.request(.get, "/demo/installations/sdk-1", key: "listen").json)
            #expect(json["platform"] as? String == "apns")
            #expect(json["expirationTime"] as? String == "2099-12-01T10:00:00.123Z")
            #expect(json["pushVariables"] as? [String: String] == ["var1": "value1"])
            #expect(json["pushChannelExpired"] as? Bool == false)
            #expect(json["expiredPushChannel"] as? Bool == false)
            let templates = try #require(json["templates"] as? [String: [String: Any]])
            #expect(templates["Template Name"]?["body"] as? String == #"{"aps":{"alert":"$(var1)"}}"#)

            let patch = try await api.request(
                .patch, "/demo/installations/sdk-1", key: "listen",
                body: #"[{"op":"replace","path":"/templates/Template Name/body","value":"{\"aps\":{}}"},{"op":"add","path":"/pushVariables/var2","value":"v"}]"#)
            #expect(patch.status == .ok)
            #expect(patch.json?["pushVariables"] as? [String: String] == ["var1": "value1", "var2": "v"])
            #expect((patch.json?["templates"] as? [String: [String: Any]])?["Template Name"]?["body"] as? String == #"{"aps":{}}"#)
            // Written without an expiry, it never expires.
            let again = try await api.request(
                .put, "/demo/installations/sdk-1", key: "listen",
                body: #"{"installationId":"sdk-1","platform":"apns","pushChannel":"dev-1","expirationTime":null}"#)
            #expect(again.json?["expirationTime"] as? String == "9999-12-31T23:59:59.999Z")
        }
    }

    @Test func aRegistrationWithPushVariablesIsStoredAndReadBack() async throws {
        try await Self.run { api in
            let atom: HTTPFields = [.contentType: "application/atom+xml;type=entry;charset=utf-8"]
            let description = RegistrationFixtures.entry(
                #"<AppleTemplateRegistrationDescription \#(RegistrationFixtures.connect)><Tags>tag1</Tags><PushVariables>{"var1":"value1"}</PushVariables><DeviceToken>dev-2</DeviceToken><BodyTemplate><![CDATA[{"aps":{"alert":"$(var1)"}}]]></BodyTemplate><TemplateName>Template Name</TemplateName></AppleTemplateRegistrationDescription>"#)
            let created = try await api.request(.put, "/demo/registrations/r-1", key: "listen", headers: atom, body: description)
            #expect(created.status == .ok)
            let read = try await api.request(.get, "/demo/registrations/r-1", key: "listen")
            let xml = String(buffer: read.body)
            #expect(xml.contains(#"<Tags>tag1</Tags><PushVariables>{"var1":"value1"}</PushVariables><DeviceToken>dev-2</DeviceToken>"#))
            let parsed = try RegistrationXML.azure.parseEntry(Array(read.body.readableBytesView))
            #expect(parsed.registration.pushVariables == ["var1": "value1"])
            #expect(parsed.registration.template?.name == "Template Name")

            let bad = RegistrationFixtures.entry(
                #"<AppleRegistrationDescription \#(RegistrationFixtures.connect)><PushVariables>{"bad name":"x"}</PushVariables><DeviceToken>dev-3</DeviceToken></AppleRegistrationDescription>"#)
            let refused = try await api.request(.put, "/demo/registrations/r-2", key: "listen", headers: atom, body: bad)
            #expect(refused.status == .badRequest)
            #expect(refused.errorCode == "InvalidPushVariables")
        }
    }
}
