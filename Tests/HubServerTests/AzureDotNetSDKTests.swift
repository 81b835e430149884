import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NIOCore
import NotificationHub
import Testing

/// Requests exactly as Azure's .NET SDK (`Microsoft.Azure.NotificationHubs`, `NotificationHubClient`) makes them,
/// and the parts of the answers its parsers read: it sends no `Accept`, adds `?api-version=2020-06` and a
/// `TrackingId`, and signs `http://{host}/{hub}/{path}/` lower-cased, without port or query
/// (`TokenProvider.NormalizeAppliesTo` and `SharedAccessSignatureBuilder.BuildSignature`).
@Suite struct AzureDotNetSDKTests {
    static func run<T: Sendable>(_ body: @Sendable (APITestHarness, RecordingAdapter) async throws -> T) async throws -> T {
        let apple = RecordingAdapter(platform: .apns, format: .apple)
        let windows = RecordingAdapter(platform: .wns, format: .windows)
        return try await APITestHarness.run(adapters: [apple, windows]) { harness in try await body(harness, apple) }
    }

    /// The SDK's token for a request path (the path as sent, which may hold capitals).
    static func sdkToken(_ path: String, key: String = "manage") -> String {
        var resource = "http://localhost" + path.split(separator: "?", maxSplits: 1)[0]
        if !resource.hasSuffix("/") { resource += "/" }
        let secret = APITestHarness.keys.first { $0.name == key }!.primaryKey
        return SharedAccessSignature.make(resource: resource.lowercased(), keyName: key, key: secret, expiry: Date() + 600)
    }

    /// One SDK request: no `Accept`, a `TrackingId`, the SDK's token.
    static func call(
        _ harness: APITestHarness, _ method: HTTPRequest.Method, _ path: String, key: String = "manage",
        headers: HTTPFields = [:], body: String? = nil
    ) async throws -> TestResponse {
        var headers = headers
        headers[.authorization] = sdkToken(path, key: key)
        headers[HTTPField.Name("TrackingId")!] = "5e8a2c43-8f8b-4d1f-9f43-4a1e0b7c2d10"
        let separator = path.contains("?") ? "&" : "?"
        return try await harness.client.execute(
            uri: path + separator + "api-version=2020-06", method: method, headers: headers,
            body: body.map { ByteBuffer(string: $0) })
    }

    /// A device token (the recording adapter takes handles that start with `dev-`).
    static let deviceToken = "dev-62BCD3484834B7E2DC56733AC5509259230CC1BA82BA1AE7D06E91908A05A8FA"

    /// `CreateOrUpdateInstallationAsync` for an id with capitals (an iOS `identifierForVendor`), as the SDK's
    /// Newtonsoft serializer writes it (nulls included); then `GetInstallationAsync` and `DeleteInstallationAsync`.
    @Test func installationWithCapitalsRoundTrips() async throws {
        try await Self.run { harness, _ in
            let id = "6B29FC40-CA47-1067-B31D-00DD010662DA"
            let body = #"{"installationId":"\#(id)","userId":null,"pushChannel":"\#(Self.deviceToken)","pushChannelExpired":null,"platform":"apns","expirationTime":null,"tags":["username:alice"]}"#
            let put = try await Self.call(harness, .put, "/demo/installations/\(id)", key: "listen", body: body)
            #expect(put.status == .ok, "\(put.text)")
            let get = try await Self.call(harness, .get, "/demo/installations/\(id)", key: "listen")
            #expect(get.status == .ok)
            #expect(get.json?["installationId"] as? String == id)
            let delete = try await Self.call(harness, .delete, "/demo/installations/\(id)", key: "listen")
            #expect(delete.status == .noContent)
            // GetInstallationAsync of a missing installation: Azure's 404 with an XML <Error> the SDK reads.
            let missing = try await Self.call(harness, .get, "/demo/installations/\(id)", key: "listen")
            #expect(missing.status == .notFound)
            #expect(missing.headers[.contentType] == "application/xml; charset=utf-8")
            #expect(missing.xmlElement("Code") == "404")
            #expect(missing.xmlElement("Detail")?.hasSuffix("TrackingId:5e8a2c43-8f8b-4d1f-9f43-4a1e0b7c2d10") == true)
            #expect(missing.errorCode == "InstallationNotFound")
        }
    }

    /// `CreateRegistrationIdAsync`, `CreateOrUpdateRegistrationAsync` (the SDK writes `<RegistrationId i:nil="true"/>`),
    /// `GetRegistrationsByChannelAsync`, `GetRegistrationsByTagAsync` with a tag with capitals, then
    /// `DeleteRegistrationAsync(id)`, which sends `If-Match: "*"`.
    @Test func registrationLifecycle() async throws {
        try await Self.run { harness, _ in
            let created = try await Self.call(harness, .post, "/demo/registrationids", key: "listen")
            #expect(created.status == .created)
            let location = try #require(created.headers[.location])
            let id = String(location.split(separator: "/").last!.split(separator: "?")[0])
            let entry = RegistrationFixtures.entry(
                #"<AppleRegistrationDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"><RegistrationId i:nil="true"/><Tags>Team:Red,username:alice</Tags><DeviceToken>\#(Self.deviceToken)</DeviceToken></AppleRegistrationDescription>"#)
            let put = try await Self.call(
                harness, .put, "/demo/registrations/\(id)", key: "listen",
                headers: [.contentType: "application/atom+xml;type=entry;charset=utf-8"], body: entry)
            #expect(put.status == .ok, "\(put.text)")
            #expect(put.headers[.eTag] != nil)

            let filter = "ChannelUri eq '\(Self.deviceToken)'".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let byChannel = try await Self.call(harness, .get, "/demo/registrations?$filter=\(filter)", key: "listen")
            #expect(byChannel.status == .ok)
            #expect(byChannel.text.contains("<RegistrationId>\(id)</RegistrationId>"))

            let byTag = try await Self.call(harness, .get, "/demo/tags/Team:Red/registrations")
            #expect(byTag.status == .ok, "\(byTag.text)")
            #expect(byTag.text.contains("<RegistrationId>\(id)</RegistrationId>"))

            let delete = try await Self.call(harness, .delete, "/demo/registrations/\(id)", key: "listen", headers: [HTTPField.Name("If-Match")!: #""*""#])
            #expect(delete.status == .ok, "\(delete.text)")
            let again = try await Self.call(harness, .delete, "/demo/registrations/\(id)", key: "listen", headers: [HTTPField.Name("If-Match")!: #""*""#])
            #expect(again.status == .notFound)
            #expect(again.xmlElement("Code") == "404")
        }
    }

    /// `SendAppleNativeNotificationAsync` then `GetNotificationOutcomeDetailsAsync`: the details in Azure's XML, in
    /// the order the SDK's `DataContractSerializer` reads them.
    @Test func outcomeDetailsAreAzureXMLInContractOrder() async throws {
        try await Self.run { harness, apple in
            let put = try await Self.call(
                harness, .put, "/demo/installations/Phone-1", key: "listen",
                body: #"{"installationId":"Phone-1","platform":"apns","pushChannel":"\#(Self.deviceToken)","tags":["username:alice"]}"#)
            #expect(put.status == .ok)
            let send = try await Self.call(
                harness, .post, "/demo/messages", key: "send",
                headers: [
                    .contentType: "application/json", HTTPField.Name("ServiceBusNotification-Format")!: "apple",
                    HTTPField.Name("ServiceBusNotification-Tags")!: "username:alice",
                ],
                body: #"{"aps":{"alert":"Hello"}}"#)
            #expect(send.status == .created)
            let id = try #require(send.headers[.location]?.split(separator: "/").last.map(String.init))
            _ = try await harness.waitForFinal(id)
            let details = try await Self.call(harness, .get, "/demo/messages/\(id)", key: "send")
            #expect(details.status == .ok)
            #expect(details.headers[.contentType] == "application/xml; charset=utf-8")
            let root = try XMLReader().parse(Array(details.body.readableBytesView))
            #expect(root.name == "NotificationDetails")
            #expect(root.namespace == "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect")
            let names = root.children.map(\.name)
            let contract = [
                "NotificationId", "Location", "State", "EnqueueTime", "StartTime", "EndTime", "NotificationBody", "Tags",
                "TargetPlatforms", "ApnsOutcomeCounts", "MpnsOutcomeCounts", "WnsOutcomeCounts", "GcmOutcomeCounts",
                "AdmOutcomeCounts", "PnsErrorDetailsUri", "FcmOutcomeCounts", "FcmV1OutcomeCounts",
            ]
            let known = names.filter(contract.contains)
            #expect(known == known.sorted { contract.firstIndex(of: $0)! < contract.firstIndex(of: $1)! }, "\(names)")
            #expect(known.contains("ApnsOutcomeCounts") && known.contains("TargetPlatforms"))
            #expect(root.children.first { $0.name == "State" }?.text == "Completed")
            #expect(root.children.first { $0.name == "Tags" }?.text == "username:alice")
            let counts = try #require(root.children.first { $0.name == "ApnsOutcomeCounts" })
            #expect(counts.children.first?.children.map(\.name) == ["Name", "Count"])
            #expect(counts.children.first?.children.map(\.text) == ["Success", "1"])
            #expect(apple.received.count == 1)
            // The SDK's per-request TrackingId is not part of the notification.
            #expect(apple.received.first?.headers.keys.contains { $0.lowercased() == "trackingid" } == false)

            // A client that asks for JSON keeps today's JSON.
            let json = try await harness.request(.get, "/demo/messages/\(id)", key: "send")
            #expect(json.headers[.contentType] == "application/json; charset=utf-8")
            #expect(json.json?["state"] as? String == "Completed")
        }
    }

    /// `EnableTestSend`: the SDK adds `&test` and parses a `NotificationOutcome`.
    @Test func testSendAnswersNotificationOutcomeXML() async throws {
        try await Self.run { harness, _ in
            _ = try await Self.call(
                harness, .put, "/demo/installations/Phone-2", key: "listen",
                body: #"{"installationId":"Phone-2","platform":"apns","pushChannel":"\#(Self.deviceToken)","tags":["t"]}"#)
            let send = try await Self.call(
                harness, .post, "/demo/messages?test", key: "send",
                headers: [.contentType: "application/json", HTTPField.Name("ServiceBusNotification-Format")!: "apple"],
                body: #"{"aps":{"alert":"Hello"}}"#)
            #expect(send.status == .created)
            let root = try XMLReader().parse(Array(send.body.readableBytesView))
            #expect(root.name == "NotificationOutcome")
            #expect(root.children.map(\.name) == ["Success", "Failure", "Results"])
            #expect(root.children[0].text == "1")
            let result = try #require(root.children[2].children.first)
            #expect(result.name == "RegistrationResult")
            #expect(result.children.map(\.name) == ["ApplicationPlatform", "PnsHandle", "RegistrationId", "Outcome"])
        }
    }

    /// `ScheduleNotificationAsync` writes `UtcDateTime.ToString("s")`, a time without a zone, which Azure reads as
    /// UTC; what is not an ISO 8601 date and time stays refused.
    @Test func scheduleTimeWithoutZoneIsUTC() async throws {
        try await Self.run { harness, _ in
            let name = HTTPField.Name("ServiceBusNotification-ScheduleTime")!
            func schedule(_ time: String) async throws -> TestResponse {
                try await Self.call(
                    harness, .post, "/demo/schedulednotifications", key: "send",
                    headers: [.contentType: "application/json", HTTPField.Name("ServiceBusNotification-Format")!: "apple", name: time],
                    body: #"{"aps":{"alert":"Later"}}"#)
            }
            let accepted = try await schedule("2099-12-01T09:30:00")
            #expect(accepted.status == .created, "\(accepted.text)")
            let id = try #require(accepted.headers[.location]?.split(separator: "/").last.map(String.init))
            let record = try #require(try await harness.hub.sends.record(id: id))
            #expect(record.scheduledTime == HubDateFormat.date(from: "2099-12-01T09:30:00Z"))
            let fraction = try await schedule("2099-12-01T09:30:00.25")
            let fractionID = try #require(fraction.headers[.location]?.split(separator: "/").last.map(String.init))
            #expect(try await harness.hub.sends.record(id: fractionID)?.scheduledTime == HubDateFormat.date(from: "2099-12-01T09:30:00.250Z"))
            for bad in ["2099-12-01T09:30", "2099-12-01", "2099-12-01 09:30:00", "2099-13-01T09:30:00", "12/01/2099 09:30:00", "2099-12-01T09:30:00+"] {
                let refused = try await schedule(bad)
                #expect(refused.status == .badRequest, "\(bad)")
                #expect(refused.errorCode == "InvalidScheduleTime", "\(bad)")
            }
        }
    }

    /// `SendDirectNotificationAsync(notification, handles)`: a `multipart/mixed` body with the SDK's quoted
    /// boundary and `inline; name=…` parts; `PatchInstallationAsync` with the SDK's lower-case ops and a null
    /// value on remove; `CancelNotificationAsync` of a scheduled send by the id from its `Location`.
    @Test func batchPatchAndCancel() async throws {
        try await Self.run { harness, apple in
            let boundary = "nh-batch-multipart-boundary"
            let body = [
                "--\(boundary)", "Content-Type: application/json; charset=utf-8", "Content-Disposition: inline; name=notification",
                "", #"{"aps":{"alert":"Batch"}}"#,
                "--\(boundary)", "Content-Type: application/json; charset=utf-8", "Content-Disposition: inline; name=devices",
                "", #"["dev-b1","dev-b2"]"#, "--\(boundary)--", "",
            ].joined(separator: "\r\n")
            let batch = try await Self.call(
                harness, .post, "/demo/messages/$batch?direct", key: "send",
                headers: [
                    .contentType: #"multipart/mixed; boundary="\#(boundary)""#,
                    HTTPField.Name("ServiceBusNotification-Format")!: "apple",
                ],
                body: body)
            #expect(batch.status == .created, "\(batch.text)")
            let batchID = try #require(batch.headers[.location]?.split(separator: "/").last.map(String.init))
            _ = try await harness.waitForFinal(batchID)
            #expect(Set(apple.received.map(\.handle)).isSuperset(of: ["dev-b1", "dev-b2"]))

            _ = try await Self.call(
                harness, .put, "/demo/installations/Tablet-9", key: "listen",
                body: #"{"installationId":"Tablet-9","platform":"apns","pushChannel":"dev-t9","tags":["a","b"]}"#)
            let patch = try await Self.call(
                harness, .patch, "/demo/installations/Tablet-9", key: "listen",
                headers: [.contentType: "application/json-patch+json"],
                body: #"[{"op":"add","path":"/tags","value":"Team:Blue"},{"op":"remove","path":"/tags/a","value":null}]"#)
            #expect(patch.status == .ok, "\(patch.text)")
            let tags = try #require(patch.json?["tags"] as? [String])
            #expect(Set(tags) == ["b", "Team:Blue"])

            let scheduled = try await Self.call(
                harness, .post, "/demo/schedulednotifications", key: "send",
                headers: [
                    .contentType: "application/json", HTTPField.Name("ServiceBusNotification-Format")!: "apple",
                    HTTPField.Name("ServiceBusNotification-ScheduleTime")!: "2099-01-01T00:00:00",
                ],
                body: #"{"aps":{"alert":"Later"}}"#)
            let scheduledID = try #require(scheduled.headers[.location]?.split(separator: "/").last.map(String.init))
            let cancel = try await Self.call(harness, .delete, "/demo/schedulednotifications/\(scheduledID)", key: "send")
            #expect(cancel.status == .ok)
        }
    }

    /// `SendTemplateNotificationAsync(properties, tag)`: the properties as a JSON object, format `template`.
    @Test func templateSendReachesTheTemplate() async throws {
        try await Self.run { harness, apple in
            let put = try await Self.call(
                harness, .put, "/demo/installations/Phone-3", key: "listen",
                body: #"{"installationId":"Phone-3","platform":"apns","pushChannel":"dev-p3","tags":["username:bob"],"templates":{"greeting":{"body":"{\"aps\":{\"alert\":\"$(message)\"}}"}}}"#)
            #expect(put.status == .ok, "\(put.text)")
            let send = try await Self.call(
                harness, .post, "/demo/messages", key: "send",
                headers: [
                    .contentType: "application/json", HTTPField.Name("ServiceBusNotification-Format")!: "template",
                    HTTPField.Name("ServiceBusNotification-Tags")!: "username:bob",
                ],
                body: #"{"message":"Hi Bob"}"#)
            #expect(send.status == .created, "\(send.text)")
            let id = try #require(send.headers[.location]?.split(separator: "/").last.map(String.init))
            _ = try await harness.waitForFinal(id)
            #expect(apple.received.contains { $0.handle == "dev-p3" && $0.payload == #"{"aps":{"alert":"Hi Bob"}}"# })
        }
    }

    /// Errors are Azure's XML to a client that asks for nothing else, JSON to one that asks for JSON.
    @Test func errorsFollowAccept() async throws {
        try await Self.run { harness, _ in
            let path = "/demo/installations/none"
            for (accept, type) in [
                (nil, "application/xml"), ("*/*", "application/xml"), ("application/json", "application/json"),
                ("application/xml, application/json;q=0.5", "application/xml"), ("text/html, application/json", "application/json"),
                ("application/json;q=0", "application/xml"),
            ] as [(String?, String)] {
                var headers: HTTPFields = [.authorization: Self.sdkToken(path)]
                if let accept { headers[.accept] = accept }
                let response = try await harness.client.execute(uri: path, method: .get, headers: headers, body: nil)
                #expect(response.status == .notFound)
                #expect(response.headers[.contentType] == "\(type); charset=utf-8", "\(accept ?? "none")")
                #expect(response.errorCode == "InstallationNotFound")
            }
            // Hostile text in a message still makes a well-formed error that reads back as written.
            let hostile = try await harness.client.execute(
                uri: "/demo/installations?tags=%3Cx%3E%26%01%5D%5D%3E", method: .get,
                headers: [.authorization: Self.sdkToken("/demo/installations")], body: nil)
            #expect(hostile.status == .badRequest)
            let root = try XMLReader().parse(Array(hostile.body.readableBytesView))
            #expect(root.name == "Error")
            #expect(root.children.map(\.name) == ["Code", "Detail", "ErrorCode"])
            #expect(root.children[1].text.hasSuffix("found '<'"))
            // A TrackingId that is not an id is not echoed.
            let forged = try await harness.client.execute(
                uri: path, method: .get,
                headers: [.authorization: Self.sdkToken(path), HTTPField.Name("TrackingId")!: "<x>&y"], body: nil)
            #expect(!forged.text.contains("TrackingId"))
            #expect(!forged.text.contains("<x>"))
        }
    }


    /// Accept headers as browsers and tools send them.
    @Test(arguments: [
        (nil, ResponseFormat.xml), ("", .xml), ("*/*", .xml), ("application/json", .json), ("application/JSON", .json),
        ("application/problem+json", .json), ("application/atom+xml, application/json;q=0.9", .xml),
        ("application/json;q=0.9, application/xml;q=0.9", .xml), ("application/json; q=abc", .xml),
    ] as [(String?, ResponseFormat)])
    func negotiatesAccept(accept: String?, format: ResponseFormat) {
        #expect(ResponseFormat(accept: accept) == format)
    }

}

/// `listRegistrationsByChannel` of Azure's JavaScript SDK: the `$filter` it writes for each kind of channel, through
/// `URLSearchParams` (`+` for a space), with browser endpoints and Windows channel URIs percent-encoded inside the
/// literal (`encodeURIComponent`).
@Suite struct AzureJavaScriptSDKFilterTests {
    static func query(_ filter: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~ ")
        return "/demo/registrations?$filter="
            + filter.addingPercentEncoding(withAllowedCharacters: allowed)!.replacingOccurrences(of: " ", with: "+")
    }

    static func encodeURIComponent(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-_.!~*'()")
        return text.addingPercentEncoding(withAllowedCharacters: allowed)!
    }

    @Test func browserAndWindowsFiltersFindTheirRegistrations() async throws {
        let browser = RecordingAdapter(platform: Platform("browser"), format: NotificationFormat("browser"), accepts: { _ in true })
        let windows = RecordingAdapter(platform: .wns, format: .windows, accepts: { _ in true })
        try await APITestHarness.run(adapters: [browser, windows]) { harness in
            let endpoint = "https://push.example.net/send/a b?c=d%2Be"
            let subscription = #"{"endpoint":"\#(endpoint)","p256dh":"BPkey","auth":"authkey"}"#
            let put = try await harness.request(
                .put, "/demo/installations/web-1", key: "listen",
                body: #"{"installationId":"web-1","platform":"browser","pushChannel":\#(subscription)}"#)
            #expect(put.status == .ok, "\(put.text)")
            let channel = "https://db5p.notify.windows.com/?token=AwYAAAB%2bx%2fY"
            let wns = try await harness.request(
                .put, "/demo/installations/win-1", key: "listen",
                body: #"{"installationId":"win-1","platform":"wns","pushChannel":"\#(channel)"}"#)
            #expect(wns.status == .ok, "\(wns.text)")

            let found = try await harness.request(
                .get, Self.query("Endpoint eq '\(Self.encodeURIComponent(endpoint))' and P256DH eq 'BPkey' and Auth eq 'authkey'"),
                key: "listen")
            #expect(found.status == .ok, "\(found.text)")
            #expect(found.text.contains("web-1"))
            let reordered = try await harness.request(
                .get, Self.query("Auth eq 'authkey' and Endpoint eq '\(endpoint)' and P256DH eq 'BPkey'"), key: "listen")
            #expect(reordered.text.contains("web-1"))
            let wrongKey = try await harness.request(
                .get, Self.query("Endpoint eq '\(Self.encodeURIComponent(endpoint))' and P256DH eq 'other' and Auth eq 'authkey'"),
                key: "listen")
            #expect(wrongKey.status == .ok)
            #expect(!wrongKey.text.contains("web-1"))

            for literal in [Self.encodeURIComponent(channel), channel] {
                let byURI = try await harness.request(.get, Self.query("ChannelUri eq '\(literal)'"), key: "listen")
                #expect(byURI.status == .ok)
                #expect(byURI.text.contains("win-1"), "\(literal)")
            }

            for bad in [
                "Endpoint eq 'x' and P256DH eq 'y'", "Endpoint eq 'x' and Endpoint eq 'y' and Auth eq 'z'",
                "ChannelUri eq 'a' or ChannelUri eq 'b'", "ChannelUri eq 'a' and", "ChannelUri eq 'a''", "Tags eq 'a'",
                "ChannelUri eq ''", "BaiduChannelId eq x' and BaiduUserId eq 'y'",
            ] {
                let refused = try await harness.request(.get, Self.query(bad), key: "listen")
                #expect(refused.status == .badRequest, "\(bad)")
                #expect(refused.errorCode == "UnsupportedFilter", "\(bad)")
            }
        }
    }
}
