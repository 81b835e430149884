import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NotificationHub
import Testing

@Suite struct RegistrationEndpointTests {
    static func run<T: Sendable>(_ body: @Sendable (APITestHarness, RecordingAdapter, RecordingAdapter) async throws -> T) async throws -> T {
        let apple = RecordingAdapter(platform: .apns, format: .apple)
        let windows = RecordingAdapter(platform: .wns, format: .windows)
        return try await APITestHarness.run(adapters: [apple, windows]) { harness in try await body(harness, apple, windows) }
    }

    static let connect = RegistrationFixtures.connect

    static func appleNative(_ handle: String, tags: String = "") -> String {
        RegistrationFixtures.entry(
            "<AppleRegistrationDescription \(connect)>\(tags.isEmpty ? "" : "<Tags>\(tags)</Tags>")<DeviceToken>\(handle)</DeviceToken></AppleRegistrationDescription>")
    }

    static func appleTemplate(_ handle: String, tags: String, body: String = #"{"aps":{"alert":"$(message)"}}"#) -> String {
        RegistrationFixtures.entry(
            "<AppleTemplateRegistrationDescription \(connect)><Tags>\(tags)</Tags><DeviceToken>\(handle)</DeviceToken><BodyTemplate><![CDATA[\(body)]]></BodyTemplate><Expiry>$(expiry)</Expiry><TemplateName>greeting</TemplateName><Priority>5</Priority></AppleTemplateRegistrationDescription>")
    }

    static let atom: HTTPFields = [.contentType: "application/atom+xml;type=entry;charset=utf-8"]

    static func entry(_ response: TestResponse) throws -> (registration: Registration, root: XMLElement) {
        let root = try XMLReader().parse(Array(response.body.readableBytesView))
        let parsed = try RegistrationXML.azure.parseEntry(Array(response.body.readableBytesView))
        var registration = parsed.registration
        let description = try #require(root.children.first { $0.name == "content" }?.children.first)
        registration.etag = Int(description.children.first { $0.name == "ETag" }?.text ?? "") ?? -1
        return (registration, root)
    }

    @Test func documentedWindowsRegistrationsAreCreatedReadUpdatedAndDeleted() async throws {
        try await Self.run { harness, _, _ async throws in
            let documented = RegistrationFixtures.windowsTemplate.replacingOccurrences(of: "{ChannelUri}", with: "dev-w1")
            // The documentation's placeholder body is not a template the hub could render.
            let placeholder = try await harness.request(.post, "/demo/registrations", key: "listen", headers: Self.atom, body: documented)
            #expect(placeholder.status == .badRequest)
            #expect(placeholder.errorCode == "InvalidTemplate")
            #expect(placeholder.errorMessage?.contains("<BodyTemplate>") == true)
            let body = documented.replacingOccurrences(
                of: "{Template for the body}", with: #"<tile><visual><binding template="TileSmall"><text>$(message)</text></binding></visual></tile>"#)
            let created = try await harness.request(.post, "/demo/registrations/?api-version=2015-01", key: "listen", headers: Self.atom, body: body)
            #expect(created.status == .ok, "\(created.text)")
            #expect(created.headers[.contentType] == "application/atom+xml;type=entry;charset=utf-8")
            #expect(created.headers[.eTag] == #"W/"1""#)
            let (registration, root) = try Self.entry(created)
            let id = registration.registrationID
            try RegistrationID.validate(id)
            #expect(created.headers[.contentLocation]?.hasSuffix("/demo/registrations/\(id)") == true)
            #expect(root.attribute("etag", namespace: RegistrationXML.metadataNamespace) == #"W/"1""#)
            #expect(root.children.map(\.name) == ["id", "title", "published", "updated", "link", "content"])
            #expect(registration.template?.headers.map(\.name) == ["X-WNS-Type", "X-WNS-Tag"])
            #expect(registration.tags == ["myTag", "myOtherTag"])

            let read = try await harness.request(.get, "/demo/registrations/\(id)", key: "listen")
            #expect(read.status == .ok)
            #expect(read.headers[.eTag] == #"W/"1""#)
            #expect(try Self.entry(read).registration.template == registration.template)

            let native = RegistrationFixtures.windowsNative.replacingOccurrences(of: "{ChannelUri}", with: "dev-w1")
            var stale: HTTPFields = Self.atom
            stale[HTTPField.Name("If-Match")!] = #""7""#
            let refused = try await harness.request(.put, "/demo/registrations/\(id)", key: "listen", headers: stale, body: native)
            #expect(refused.status == .preconditionFailed)
            #expect(refused.errorCode == "PreconditionFailed")
            var current: HTTPFields = Self.atom
            current[HTTPField.Name("If-Match")!] = #""1""#
            let updated = try await harness.request(.put, "/demo/registrations/\(id)", key: "listen", headers: current, body: native)
            #expect(updated.status == .ok)
            #expect(updated.headers[.eTag] == #"W/"2""#)
            #expect(try Self.entry(updated).registration.template == nil)
            var star: HTTPFields = Self.atom
            star[HTTPField.Name("If-Match")!] = "*"
            #expect(try await harness.request(.put, "/demo/registrations/\(id)", key: "listen", headers: star, body: native).headers[.eTag] == #"W/"3""#)

            let staleDelete = try await harness.request(.delete, "/demo/registrations/\(id)", key: "listen", headers: stale)
            #expect(staleDelete.status == .preconditionFailed)
            #expect(try await harness.request(.delete, "/demo/registrations/\(id)", key: "listen", headers: star).status == .ok)
            let gone = try await harness.request(.get, "/demo/registrations/\(id)", key: "listen")
            #expect(gone.status == .notFound)
            #expect(gone.errorCode == "RegistrationNotFound")
            #expect(try await harness.request(.delete, "/demo/registrations/\(id)", key: "listen").status == .notFound)
            #expect(try await harness.request(.put, "/demo/registrations/absent", key: "listen", headers: star, body: native).status == .notFound)
        }
    }

    @Test func registrationIDsAreIssuedThenUsed() async throws {
        try await Self.run { harness, _, _ async throws in
            let issued = try await harness.request(.post, "/demo/registrationIDs/?api-version=2015-01", key: "listen")
            #expect(issued.status == .created)
            let location = try #require(issued.headers[.location])
            let url = try #require(URL(string: location))
            // The .NET SDK takes the fourth path segment after `registrationids/`.
            #expect(url.pathComponents.count == 4)
            #expect(url.pathComponents[2] == "registrationids")
            let id = url.pathComponents[3]
            try RegistrationID.validate(id)
            #expect(try await harness.request(.post, "/demo/registrationids", key: "listen").status == .created)

            let answer = RegistrationFixtures.appleNativeAnswer
                .replacingOccurrences(of: "62BCD3484834B7E2DC56733AC5509259230CC1BA82BA1AE7D06E91908A05A8FA", with: "dev-a1")
            let mismatch = try await harness.request(.put, "/demo/registrations/\(id)", key: "listen", headers: Self.atom, body: answer)
            #expect(mismatch.status == .badRequest)
            #expect(mismatch.errorMessage?.contains("<RegistrationId>") == true)
            // Azure's own answer, sent back as it came (a client that reads then writes).
            let custom = try await harness.request(.put, "/demo/registrations/123-234-1", key: "listen", headers: Self.atom, body: answer)
            #expect(custom.status == .ok)
            #expect(try Self.entry(custom).registration.pushChannel == .handle("dev-a1"))
            let fresh = try await harness.request(.put, "/demo/registrations/\(id)", key: "listen", headers: Self.atom, body: Self.appleNative("dev-a2"))
            #expect(fresh.status == .ok)
            #expect(try Self.entry(fresh).registration.registrationID == id)
        }
    }

    @Test func rightsFollowAzure() async throws {
        try await Self.run { harness, _, _ async throws in
            #expect(try await harness.request(.post, "/demo/registrations", key: "send", headers: Self.atom, body: Self.appleNative("dev-1")).status == .forbidden)
            #expect(try await harness.request(.post, "/demo/registrationIDs", key: "send").status == .forbidden)
            #expect(try await harness.request(.post, "/demo/registrations", key: nil, headers: Self.atom, body: Self.appleNative("dev-1")).status == .unauthorized)
            #expect(try await harness.request(.post, "/demo/registrations", key: "listen", headers: Self.atom, body: Self.appleNative("dev-1")).status == .ok)
            #expect(try await harness.request(.get, "/demo/registrations", key: "listen").status == .forbidden)
            #expect(try await harness.request(.get, "/demo/tags/a/registrations", key: "listen").status == .forbidden)
            #expect(try await harness.request(.get, "/demo/registrations?$filter=ChannelUri%20eq%20'dev-1'", key: "listen").status == .ok)
            #expect(try await harness.request(.get, "/demo/registrations", key: "manage").status == .ok)
            #expect(try await harness.request(.get, "/demo/tags/a/registrations", key: "manage").status == .ok)
        }
    }

    @Test func sendsReachRegistrationsLikeInstallations() async throws {
        try await Self.run { harness, apple, _ async throws in
            let native = try Self.entry(try await harness.request(.post, "/demo/registrations", key: "listen", headers: Self.atom, body: Self.appleNative("dev-n", tags: "team, alpha"))).registration
            let templated = try Self.entry(try await harness.request(.post, "/demo/registrations", key: "listen", headers: Self.atom, body: Self.appleTemplate("dev-t", tags: "team"))).registration

            let nativeSend = try await harness.request(
                .post, "/demo/messages", key: "send",
                headers: [HTTPField.Name("ServiceBusNotification-Format")!: "apple", HTTPField.Name("ServiceBusNotification-Tags")!: "team && alpha"],
                body: #"{"aps":{"alert":"hi"}}"#)
            #expect(nativeSend.status == .created)
            let nativeID = try #require(nativeSend.headers[HTTPField.Name("TrackingId")!])
            let nativeRecord = try await harness.waitForFinal(nativeID)
            #expect(nativeRecord.summary.counts == [.apns: [.success: 1]])

            let templateSend = try await harness.request(
                .post, "/demo/messages", key: "send",
                headers: [HTTPField.Name("ServiceBusNotification-Format")!: "template", HTTPField.Name("ServiceBusNotification-Tags")!: "team"],
                body: #"{"message":"hello","expiry":"2030-01-01T00:00:00Z"}"#)
            #expect(templateSend.status == .created)
            let templateID = try #require(templateSend.headers[HTTPField.Name("TrackingId")!])
            let templateRecord = try await harness.waitForFinal(templateID)
            #expect(templateRecord.summary.counts == [.apns: [.success: 1]])

            let received = apple.received
            // The native send reached only the native registration, the template send only the template one.
            #expect(received.filter { $0.format == .apple && $0.payload == #"{"aps":{"alert":"hi"}}"# }.map(\.installationID) == [native.registrationID])
            let rendered = try #require(received.first { $0.installationID == templated.registrationID })
            #expect(rendered.payload == #"{"aps":{"alert":"hello"}}"#)
            #expect(rendered.headers["apns-priority"] == "5")
            #expect(rendered.headers["ServiceBusNotification-Expiry"] == "2030-01-01T00:00:00Z")
            #expect(received.count == 2)
        }
    }

    @Test func feedbackAndTelemetryCountRegistrations() async throws {
        try await Self.run { harness, apple, _ async throws in
            let gone = try Self.entry(try await harness.request(.post, "/demo/registrations", key: "listen", headers: Self.atom, body: Self.appleNative("dev-gone", tags: "fb"))).registration
            _ = try await harness.request(.post, "/demo/registrations", key: "listen", headers: Self.atom, body: Self.appleNative("dev-ok", tags: "fb"))
            apple.script("dev-gone", [DeliveryResult(.expiredChannel, reason: "Unregistered")])
            let headers: HTTPFields = [
                HTTPField.Name("ServiceBusNotification-Format")!: "apple", HTTPField.Name("ServiceBusNotification-Tags")!: "fb",
            ]
            let first = try await harness.request(.post, "/demo/messages", key: "send", headers: headers, body: #"{"aps":{}}"#)
            let firstID = try #require(first.headers[HTTPField.Name("TrackingId")!])
            let record = try await harness.waitForFinal(firstID)
            #expect(record.summary.counts == [.apns: [.success: 1, .expiredChannel: 1]])
            let feedback = try await harness.request(.get, "/demo/messages/\(firstID)/feedback", key: "send")
            let failures = try #require(feedback.json?["failures"] as? [[String: Any]])
            #expect(failures.map { $0["installationId"] as? String } == [gone.registrationID])
            #expect(failures.first?["outcome"] as? String == "ExpiredChannel")

            // The expired registration is skipped until it is written again.
            let second = try await harness.request(.post, "/demo/messages", key: "send", headers: headers, body: #"{"aps":{}}"#)
            let secondRecord = try await harness.waitForFinal(try #require(second.headers[HTTPField.Name("TrackingId")!]))
            #expect(secondRecord.summary.counts == [.apns: [.success: 1]])
            _ = try await harness.request(.put, "/demo/registrations/\(gone.registrationID)", key: "listen", headers: Self.atom, body: Self.appleNative("dev-gone", tags: "fb"))
            let third = try await harness.request(.post, "/demo/messages", key: "send", headers: headers, body: #"{"aps":{}}"#)
            let thirdRecord = try await harness.waitForFinal(try #require(third.headers[HTTPField.Name("TrackingId")!]))
            #expect(thirdRecord.summary.counts == [.apns: [.success: 2]])

            // A direct send needs no registration at all.
            var direct = headers
            direct[HTTPField.Name("ServiceBusNotification-DeviceHandle")!] = "dev-ok"
            #expect(try await harness.request(.post, "/demo/messages?direct", key: "send", headers: direct, body: #"{"aps":{}}"#).status == .created)
        }
    }

    /// Browser registrations, for a hub with an adapter that serves the `browser` platform.
    @Test func browserRegistrationsKeepTheirSubscription() async throws {
        let browser = BrowserTestAdapter()
        let configuration = HubConfiguration(
            name: "demo", keys: APITestHarness.keys, storage: .memory, adapters: try AdapterSet([browser]))
        let hub = try await Hub.open(configuration: configuration, logger: Logger.forTest("test"))
        let app = Application(router: try HubAPI(hubs: [hub]).makeRouter())
        do {
            try await app.test(.router) { client in
                var headers = Self.atom
                headers[.authorization] = APITestHarness.token("listen")
                let description = "<BrowserTemplateRegistrationDescription \(Self.connect)><Tags>web</Tags><Endpoint>https://push.example/sub?a=1&amp;b=2</Endpoint><P256DH>BKey</P256DH><Auth>secret</Auth><BodyTemplate><![CDATA[{\"title\":\"$(title)\"}]]></BodyTemplate><TemplateName>news</TemplateName></BrowserTemplateRegistrationDescription>"
                let created = try await client.execute(
                    uri: "/demo/registrations", method: .post, headers: headers,
                    body: ByteBuffer(string: RegistrationFixtures.entry(description)))
                #expect(created.status == .ok, "\(String(buffer: created.body))")
                let registration = try Self.entry(created).registration
                #expect(registration.platform == Platform("browser"))
                #expect(registration.pushChannel == .object(["endpoint": "https://push.example/sub?a=1&b=2", "p256dh": "BKey", "auth": "secret"]))
                #expect(registration.template?.name == "news")
                let xml = String(buffer: created.body)
                #expect(xml.contains("<Tags>web</Tags><Endpoint>https://push.example/sub?a=1&amp;b=2</Endpoint><P256DH>BKey</P256DH><Auth>secret</Auth><BodyTemplate>"))
                let incomplete = try await client.execute(
                    uri: "/demo/registrations", method: .post, headers: headers,
                    body: ByteBuffer(string: RegistrationFixtures.entry("<BrowserRegistrationDescription \(Self.connect)><Endpoint>https://push.example/x</Endpoint></BrowserRegistrationDescription>")))
                #expect(incomplete.status == .badRequest)
                #expect(incomplete.errorMessage?.contains("<P256DH>") == true)
            }
        } catch {
            try? await hub.close()
            throw error
        }
        try await hub.close()
    }

    @Test func listingsIncludeInstallationsAndPage() async throws {
        try await Self.run { harness, _, _ async throws in
            for index in 0..<3 {
                _ = try await harness.request(.post, "/demo/registrations", key: "listen", headers: Self.atom, body: Self.appleNative("dev-\(index)", tags: "t\(index), all"))
            }
            let installation = #"{"installationId":"phone","platform":"apns","pushChannel":"dev-phone","tags":["all"],"templates":{"welcome":{"body":"{\"aps\":{\"alert\":\"$(m)\"}}","tags":["w"]}}}"#
            #expect(try await harness.request(.put, "/demo/installations/phone", key: "listen", body: installation).status == .ok)

            var ids: [String] = []
            var token: String?
            var pages = 0
            repeat {
                let query = "$top=2" + (token.map { "&continuationtoken=\($0)" } ?? "")
                let page = try await harness.request(.get, "/demo/registrations?api-version=2015-01&\(query)", key: "manage")
                #expect(page.status == .ok)
                #expect(page.headers[.contentType] == "application/atom+xml;type=feed;charset=utf-8")
                let feed = try XMLReader().parse(Array(page.body.readableBytesView))
                #expect(feed.name == "feed")
                ids += feed.children.filter { $0.name == "entry" }.compactMap { $0.children.first { $0.name == "title" }?.text }
                token = page.headers[HTTPField.Name("x-ms-continuationtoken")!]
                pages += 1
            } while token != nil
            #expect(ids.count == 5)
            #expect(pages == 3)
            #expect(ids.contains(RegistrationID.projection(installationID: "phone")))
            #expect(ids.contains(RegistrationID.projection(installationID: "phone", templateName: "welcome")))

            let byTag = try await harness.request(.get, "/demo/tags/w/registrations", key: "manage")
            let tagged = try XMLReader().parse(Array(byTag.body.readableBytesView)).children.filter { $0.name == "entry" }
            #expect(tagged.count == 1)
            let system = try await harness.request(.get, "/demo/tags/$InstallationId:%7Bphone%7D/registrations", key: "manage")
            #expect(try XMLReader().parse(Array(system.body.readableBytesView)).children.filter { $0.name == "entry" }.count == 2)

            // OData's `+` for spaces, as the .NET SDK encodes the filter.
            let byChannel = try await harness.request(.get, "/demo/registrations?$filter=ChannelUri+eq+'dev-1'", key: "listen")
            let channelEntries = try XMLReader().parse(Array(byChannel.body.readableBytesView)).children.filter { $0.name == "entry" }
            #expect(channelEntries.count == 1)
            let byToken = try await harness.request(.get, "/demo/registrations?$filter=DeviceToken%20eq%20'DEV-PHONE'", key: "listen")
            #expect(try XMLReader().parse(Array(byToken.body.readableBytesView)).children.filter { $0.name == "entry" }.count == 2)

            let projection = RegistrationID.projection(installationID: "phone", templateName: "welcome")
            let read = try await harness.request(.get, "/demo/registrations/\(projection)", key: "listen")
            #expect(read.status == .ok)
            #expect(try Self.entry(read).registration.template?.name == "welcome")
            let change = try await harness.request(.put, "/demo/registrations/\(projection)", key: "listen", headers: Self.atom, body: Self.appleNative("dev-x"))
            #expect(change.status == .conflict)
            #expect(change.errorMessage?.contains("installation 'phone'") == true)
            // Deleting a template's registration removes that template from the installation; the native
            // registration stands for the installation, which goes with it.
            #expect(try await harness.request(.delete, "/demo/registrations/\(projection)", key: "listen").status == .ok)
            #expect(try await harness.request(.get, "/demo/registrations/\(projection)", key: "listen").status == .notFound)
            #expect(try await harness.request(.get, "/demo/installations/phone", key: "listen").json?["templates"] == nil)
            let native = RegistrationID.projection(installationID: "phone")
            #expect(try await harness.request(.delete, "/demo/registrations/\(native)", key: "listen").status == .ok)
            #expect(try await harness.request(.get, "/demo/installations/phone", key: "listen").status == .notFound)
            #expect(try await harness.request(.delete, "/demo/registrations/\(native)", key: "listen").status == .notFound)

            for (query, code) in [("$filter=Tags eq 'a'", "UnsupportedFilter"), ("$top=0", "InvalidParameter"), ("continuationtoken=zz", "InvalidContinuationToken")] {
                let refused = try await harness.request(.get, "/demo/registrations?\(query.replacingOccurrences(of: " ", with: "%20"))", key: "manage")
                #expect(refused.status == .badRequest)
                #expect(refused.errorCode == code)
            }
        }
    }

    @Test func idsOfTheTwoModelsCannotCollide() async throws {
        try await Self.run { harness, _, _ async throws in
            #expect(try await harness.request(.put, "/demo/installations/taken", key: "listen", body: #"{"installationId":"taken","platform":"apns","pushChannel":"dev-i"}"#).status == .ok)
            let clash = try await harness.request(.put, "/demo/registrations/taken", key: "listen", headers: Self.atom, body: Self.appleNative("dev-r"))
            #expect(clash.status == .conflict)
            #expect(try await harness.request(.put, "/demo/registrations/mine", key: "listen", headers: Self.atom, body: Self.appleNative("dev-r")).status == .ok)
            let other = try await harness.request(.put, "/demo/installations/mine", key: "listen", body: #"{"installationId":"mine","platform":"apns","pushChannel":"dev-i"}"#)
            #expect(other.status == .conflict)
            #expect(try await harness.request(.get, "/demo/installations/mine", key: "listen").status == .notFound)
            #expect(try await harness.request(.get, "/demo/registrations/taken", key: "listen").status == .notFound)
        }
    }

    @Test(arguments: [
        ("<entry", "InvalidXml", "not closed"),
        (#"<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><entry>&e;</entry>"#, "InvalidXml", "DOCTYPE"),
        (RegistrationFixtures.entry("<AppleRegistrationDescription \(RegistrationFixtures.connect)><DeviceToken>dev-1</DeviceToken><Colour/></AppleRegistrationDescription>"), "InvalidRegistration", "<Colour>"),
        (RegistrationFixtures.entry("<MpnsRegistrationDescription \(RegistrationFixtures.connect)><ChannelUri>x</ChannelUri></MpnsRegistrationDescription>"), "InvalidRegistration", "<MpnsRegistrationDescription>"),
        (RegistrationFixtures.entry("<AppleRegistrationDescription \(RegistrationFixtures.connect)><DeviceToken>nope</DeviceToken></AppleRegistrationDescription>"), "InvalidPushChannel", "dev-"),
        (RegistrationFixtures.entry("<GcmRegistrationDescription \(RegistrationFixtures.connect)><GcmRegistrationId>dev-1</GcmRegistrationId></GcmRegistrationDescription>"), "UnknownPlatform", "gcm"),
        (RegistrationFixtures.entry("<AppleRegistrationDescription \(RegistrationFixtures.connect)><Tags>bad tag!</Tags><DeviceToken>dev-1</DeviceToken></AppleRegistrationDescription>"), "InvalidTag", "<Tags>"),
        (RegistrationFixtures.entry("<AppleTemplateRegistrationDescription \(RegistrationFixtures.connect)><DeviceToken>dev-1</DeviceToken><BodyTemplate>{\"a\":\"$(x\"}</BodyTemplate></AppleTemplateRegistrationDescription>"), "InvalidTemplate", "<BodyTemplate>"),
        (RegistrationFixtures.entry("<AppleTemplateRegistrationDescription \(RegistrationFixtures.connect)><DeviceToken>dev-1</DeviceToken><BodyTemplate>{}</BodyTemplate><Priority>7</Priority></AppleTemplateRegistrationDescription>"), "InvalidRegistration", "<Priority>"),
    ])
    func badDescriptionsGetPreciseErrors(body: String, code: String, fragment: String) async throws {
        try await Self.run { harness, _, _ async throws in
            let response = try await harness.request(.post, "/demo/registrations", key: "listen", headers: Self.atom, body: body)
            #expect(response.status == .badRequest)
            #expect(response.errorCode == code)
            #expect(response.errorMessage?.contains(fragment) == true, "\(response.errorMessage ?? "")")
        }
    }

    /// Azure's Python client (azure-notification-hub-unofficial) lists, reads and deletes registrations.
    @Test func azurePythonClientListsReadsAndDeletes() async throws {
        let apple = RecordingAdapter(platform: .apns, format: .apple)
        let configuration = HubConfiguration(
            name: "demo", keys: APITestHarness.keys, storage: .memory, adapters: try AdapterSet([apple]))
        let hub = try await Hub.open(configuration: configuration, logger: Logger.forTest("test"))
        let app = Application(router: try HubAPI(hubs: [hub]).makeRouter(), configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        let output: (String, String)
        do {
            output = try await Self.runPythonClient(app)
        } catch {
            try? await hub.close()
            throw error
        }
        try await hub.close()
        let (id, json) = output
        let result = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], "python printed: \(json)")
        let listed = try #require(result["listed"] as? [[String: Any]])
        #expect(listed.count == 2)
        #expect(Set(listed.compactMap { $0["RegistrationId"] as? String }) == [id, RegistrationID.projection(installationID: "py-phone")])
        let read = try #require(result["read"] as? [String: Any])
        #expect(read["RegistrationId"] as? String == id)
        #expect(read["DeviceToken"] as? String == "dev-py")
        #expect(read["Tags"] as? [String] == ["python", "client"])
        #expect(read["BodyTemplate"] as? String == #"{"aps":{"alert":"$(message)"}}"#)
        #expect(read["TemplateName"] as? String == "greeting")
        #expect(read["etag"] as? String == #"W/"1""#)
        #expect(result["readAfterDelete"] as? Int == 404)
    }

    /// Creates a registration and an installation through the live server, then runs the Python client on them.
    static func runPythonClient(_ app: some ApplicationProtocol) async throws -> (String, String) {
        try await app.test(.live) { client in
            let port = try #require(client.port)
            var headers = Self.atom
            headers[.authorization] = APITestHarness.token("listen")
            let created = try await client.execute(
                uri: "/demo/registrations", method: .post, headers: headers,
                body: ByteBuffer(string: Self.appleTemplate("dev-py", tags: "python, client")))
            #expect(created.status == .ok)
            let id = try Self.entry(created).registration.registrationID
            _ = try await client.execute(
                uri: "/demo/installations/py-phone", method: .put, headers: [.authorization: APITestHarness.token("listen")],
                body: ByteBuffer(string: #"{"installationId":"py-phone","platform":"apns","pushChannel":"dev-phone"}"#))
            let key = try #require(APITestHarness.keys.first { $0.name == "manage" })
            let connectionString = "Endpoint=http://127.0.0.1:\(port)/;SharedAccessKeyName=manage;SharedAccessKey=\(key.primaryKey)"
            return (id, try await Self.runPython([connectionString, "demo", id]))
        }
    }

    /// Runs the Python client script and returns what it printed; fails when Python or the client is missing
    /// (`python3 -m pip install azure-notification-hub-unofficial`, as `.ci/run` does).
    static func runPython(_ arguments: [String]) async throws -> String {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Scripts/registrations-python-client.py").path
        let outputPath = NSTemporaryDirectory() + "registrations-python-\(UUID().uuidString).json"
        let errorPath = outputPath + ".err"
        defer {
            try? FileManager.default.removeItem(atPath: outputPath)
            try? FileManager.default.removeItem(atPath: errorPath)
        }
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments = ["python3", script] + arguments
                _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
                _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
                do {
                    process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
                    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
                    try process.run()
                    // A client that hangs (a request never answered) is stopped instead of holding the suite.
                    DispatchQueue.global().asyncAfter(deadline: .now() + 120) {
                        if process.isRunning { process.terminate() }
                    }
                    process.waitUntilExit()
                    continuation.resume(returning: process.terminationStatus)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw HubError(
                .conflict,
                "the Python client failed (exit \(status)); install it with `python3 -m pip install azure-notification-hub-unofficial`: \(errors.suffix(2000))")
        }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A stand-in for a Web Push adapter: serves the `browser` platform and accepts subscription objects.
final class BrowserTestAdapter: PlatformAdapter {
    let descriptor = PlatformDescriptor(
        platforms: [Platform("browser")], formats: [NotificationFormat("browser"): [Platform("browser")]],
        templateFormats: [Platform("browser"): NotificationFormat("browser")], maximumPayloadBytes: 4096,
        registrationFormats: AzureRegistrationFormats.all.filter { $0.platform == Platform("browser") })

    func validate(pushChannel: PushChannel, platform: Platform) throws(HubError) {
        guard case .object(let object) = pushChannel, Set(object.keys) == ["endpoint", "p256dh", "auth"] else {
            throw HubError(.invalidPushChannel, "a browser channel is {endpoint, p256dh, auth}")
        }
    }

    func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] { [] }

    func deliver(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
        deliveries.map { _ in .success }
    }
}
