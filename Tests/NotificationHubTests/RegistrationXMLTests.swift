import Foundation
import HubTestSupport
import NotificationHub
import Testing

@Suite struct RegistrationXMLTests {
    @Test func readsTheDocumentedWindowsNativeRegistration() throws {
        for fixture in [RegistrationFixtures.windowsNative, RegistrationFixtures.windowsNativeHTTPSNamespace] {
            let parsed = try RegistrationXML.azure.parseEntry(Array(fixture.utf8))
            #expect(parsed.element == "WindowsRegistrationDescription")
            #expect(parsed.registration.platform == .wns)
            #expect(parsed.registration.pushChannel == .handle("{ChannelUri}"))
            #expect(parsed.registration.tags == ["myTag", "myOtherTag"])
            #expect(parsed.registration.template == nil)
        }
    }

    @Test func readsTheDocumentedWindowsTemplateRegistration() throws {
        let parsed = try RegistrationXML.azure.parseEntry(Array(RegistrationFixtures.windowsTemplate.utf8))
        #expect(parsed.element == "WindowsTemplateRegistrationDescription")
        let template = try #require(parsed.registration.template)
        #expect(template.body == "{Template for the body}")
        #expect(template.headers == [
            RegistrationHeader(name: "X-WNS-Type", value: "wns/tile"), RegistrationHeader(name: "X-WNS-Tag", value: "myTag"),
        ])
        #expect(template.name == nil)
        #expect(template.installationTemplate.headers == ["X-WNS-Type": "wns/tile", "X-WNS-Tag": "myTag"])
    }

    @Test func readsAzuresOwnAnswers() throws {
        let native = try RegistrationXML.azure.parseEntry(Array(RegistrationFixtures.appleNativeAnswer.utf8))
        #expect(native.registration.registrationID == "123-234-1")
        #expect(native.registration.platform == .apns)
        #expect(native.registration.pushChannel == .handle("62BCD3484834B7E2DC56733AC5509259230CC1BA82BA1AE7D06E91908A05A8FA"))
        let template = try RegistrationXML.azure.parseEntry(Array(RegistrationFixtures.appleTemplateAnswer.utf8))
        #expect(template.registration.template == RegistrationTemplate(name: "Template Name", body: #"{"aps":{"alert":"alert!"}}"#))
        #expect(template.registration.tags == ["tag1"])
    }

    @Test func readsTheTypedDescriptionForm() throws {
        let parsed = try RegistrationXML.azure.parseEntry(Array(RegistrationFixtures.appleTemplateTyped.utf8))
        #expect(parsed.element == "AppleTemplateRegistrationDescription")
        #expect(parsed.registration.registrationID == "8372532420827572008-85883004107185159-4")
        #expect(parsed.registration.template?.expiry == "$(expiry)")
        #expect(parsed.registration.template?.body == #"{ "aps": { "alert": "$(message)"} }"#)
    }

    @Test(arguments: [
        ("<FooRegistrationDescription \(RegistrationFixtures.connect)/>", "<FooRegistrationDescription> is not a registration description"),
        ("<AppleRegistrationDescription \(RegistrationFixtures.connect)><DeviceToken>AB</DeviceToken><Colour>red</Colour></AppleRegistrationDescription>", "<Colour> is not an element of <AppleRegistrationDescription>"),
        ("<AppleRegistrationDescription \(RegistrationFixtures.connect)><Tags>a</Tags></AppleRegistrationDescription>", "needs a non-empty <DeviceToken>"),
        ("<AppleRegistrationDescription \(RegistrationFixtures.connect)><DeviceToken>A</DeviceToken><DeviceToken>B</DeviceToken></AppleRegistrationDescription>", "<DeviceToken> appears twice"),
        ("<AppleRegistrationDescription \(RegistrationFixtures.connect)><DeviceToken>A</DeviceToken><BodyTemplate>x</BodyTemplate></AppleRegistrationDescription>", "<BodyTemplate> is not an element of <AppleRegistrationDescription>"),
        ("<AppleTemplateRegistrationDescription \(RegistrationFixtures.connect)><DeviceToken>A</DeviceToken></AppleTemplateRegistrationDescription>", "needs a <BodyTemplate>"),
        ("<AppleRegistrationDescription \(RegistrationFixtures.connect)><DeviceToken>A</DeviceToken><PushVariables>[\"a\"]</PushVariables></AppleRegistrationDescription>", "<PushVariables> must hold a JSON object"),
        ("<AppleRegistrationDescription \(RegistrationFixtures.connect)><DeviceToken>A</DeviceToken><PushVariables>{\"a\":1}</PushVariables></AppleRegistrationDescription>", "the value of 'a' must be a string"),
        ("<AppleRegistrationDescription \(RegistrationFixtures.connect)><DeviceToken><b/></DeviceToken></AppleRegistrationDescription>", "<DeviceToken> in <AppleRegistrationDescription> must hold text"),
        ("<AppleRegistrationDescription \(RegistrationFixtures.connect)><DeviceToken>A</DeviceToken><Tags>a,,b</Tags></AppleRegistrationDescription>", "<Tags>"),
        ("<AppleRegistrationDescription xmlns=\"urn:other\"><DeviceToken>A</DeviceToken></AppleRegistrationDescription>", "namespace"),
        ("<WindowsTemplateRegistrationDescription \(RegistrationFixtures.connect)><ChannelUri>c</ChannelUri><BodyTemplate>b</BodyTemplate><WnsHeaders><Other/></WnsHeaders></WindowsTemplateRegistrationDescription>", "<Other> is not allowed in <WnsHeaders>"),
        ("<WindowsTemplateRegistrationDescription \(RegistrationFixtures.connect)><ChannelUri>c</ChannelUri><BodyTemplate>b</BodyTemplate><WnsHeaders><WnsHeader><Header>X</Header><Value>1</Value></WnsHeader><WnsHeader><Header>x</Header><Value>2</Value></WnsHeader></WnsHeaders></WindowsTemplateRegistrationDescription>", "appears twice"),
    ])
    func refusesUnknownAndMalformedDescriptionsNamingTheElement(description: String, fragment: String) {
        #expect {
            _ = try RegistrationXML.azure.parseEntry(Array(RegistrationFixtures.entry(description).utf8))
        } throws: { error in
            guard let error = error as? HubError, error.code == .invalidRegistration else { return false }
            return error.message.contains(fragment)
        }
    }

    @Test func refusesOtherDocuments() {
        for text in [#"<feed xmlns="http://www.w3.org/2005/Atom"/>"#, #"<entry xmlns="http://www.w3.org/2005/Atom"/>"#,
            #"<entry xmlns="http://www.w3.org/2005/Atom"><content type="text">x</content></entry>"#]
        {
            #expect(throws: HubError.self) { _ = try RegistrationXML.azure.parseEntry(Array(text.utf8)) }
        }
    }

    @Test func writesEntriesAsAzureDoes() throws {
        let registration = Registration(
            registrationID: "1-2-3", platform: .wns, pushChannel: .handle("https://wns.example/?token=a&b"),
            tags: ["a", "b"],
            template: RegistrationTemplate(
                body: "<toast>$(m)</toast>", headers: [RegistrationHeader(name: "X-WNS-Type", value: "wns/toast")]),
            etag: 3, lastUpdate: Date(timeIntervalSince1970: 1_700_000_000))
        let xml = RegistrationXML.azure.entry(registration, url: "http://hub/demo/registrations/1-2-3")
        #expect(xml.hasPrefix(#"<?xml version="1.0" encoding="utf-8"?><entry a:etag="W/&quot;3&quot;" xmlns="http://www.w3.org/2005/Atom" xmlns:a="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><id>http://hub/demo/registrations/1-2-3</id><title type="text">1-2-3</title><published>2023-11-14T22:13:20Z</published><updated>2023-11-14T22:13:20Z</updated><link rel="self" href="http://hub/demo/registrations/1-2-3"/><content type="application/xml">"#))
        #expect(xml.contains(#"<WindowsTemplateRegistrationDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:i="http://www.w3.org/2001/XMLSchema-instance"><ETag>3</ETag><ExpirationTime>9999-12-31T23:59:59.999Z</ExpirationTime><RegistrationId>1-2-3</RegistrationId><Tags>a,b</Tags><ChannelUri>https://wns.example/?token=a&amp;b</ChannelUri><BodyTemplate><![CDATA[<toast>$(m)</toast>]]></BodyTemplate><WnsHeaders><WnsHeader><Header>X-WNS-Type</Header><Value>wns/toast</Value></WnsHeader></WnsHeaders></WindowsTemplateRegistrationDescription>"#))
        let reread = try RegistrationXML.azure.parseEntry(Array(xml.utf8))
        #expect(reread.registration.registrationID == "1-2-3")
        #expect(reread.registration.template == registration.template)
    }

    @Test func feedsHoldEntries() throws {
        let registrations = (0..<3).map {
            Registration(registrationID: "r\($0)", platform: .apns, pushChannel: .handle("dev-\($0)"), etag: 1)
        }
        let xml = RegistrationXML.azure.feed(registrations, url: "http://hub/demo/registrations", updated: Date()) {
            "http://hub/demo/registrations/\($0.registrationID)"
        }
        let root = try XMLReader().parse(xml)
        #expect(root.name == "feed")
        let entries = root.children.filter { $0.name == "entry" }
        #expect(entries.count == 3)
        #expect(entries[1].attribute("etag", namespace: RegistrationXML.metadataNamespace) == #"W/"1""#)
        #expect(entries.map { $0.children.first { $0.name == "title" }?.text } == ["r0", "r1", "r2"])
    }

    /// What is written reads back as the same registration, for generated registrations of every format.
    @Test func writtenRegistrationsReadBackUnchanged() throws {
        var generator = SplitMix(seed: 19)
        let alphabet = Array("abcXYZ019 &<>\"'];\r\n\t]]>{}$()é🚀")
        func text(_ length: ClosedRange<Int>) -> String {
            String((0..<Int.random(in: length, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
        }
        func token() -> String {
            String((0..<Int.random(in: 1...12, using: &generator)).map { _ in Array("abcXYZ019_@#.:-").randomElement(using: &generator)! })
        }
        for _ in 0..<500 {
            let format = AzureRegistrationFormats.all.randomElement(using: &generator)!
            let channel: PushChannel =
                switch format.channel {
                case .element: .handle("h" + text(0...40))
                case .object: .object(["endpoint": .string("https://push.example/" + token()), "p256dh": .string(token()), "auth": .string(token())])
                case .joined(let elements, let separator):
                    .handle(elements.map { _ in "p" + token().replacingOccurrences(of: separator, with: "") }.joined(separator: separator))
                }
            var template: RegistrationTemplate?
            if Bool.random(using: &generator) {
                var headers: [RegistrationHeader] = []
                if !format.headerLists.isEmpty {
                    for index in 0..<Int.random(in: 0...3, using: &generator) {
                        headers.append(RegistrationHeader(name: "X-H\(index)", value: text(0...20)))
                    }
                }
                let apple = format.templateElements.contains(.expiry) && format.priority != nil
                template = RegistrationTemplate(
                    name: Bool.random(using: &generator) ? "n" + text(0...10) : nil, body: "b" + text(0...200),
                    expiry: apple && Bool.random(using: &generator) ? text(0...10) : nil,
                    priority: apple && Bool.random(using: &generator) ? "5" : nil, headers: headers)
            }
            let registration = Registration(
                registrationID: token(), platform: format.platform, pushChannel: channel,
                tags: Array(Set((0..<Int.random(in: 0...5, using: &generator)).map { _ in token() })), template: template,
                etag: Int.random(in: 1...1000, using: &generator))
            let xml = RegistrationXML.azure.entry(registration, url: "http://hub/h/registrations/\(registration.registrationID)")
            let reread = try RegistrationXML.azure.parseEntry(Array(xml.utf8)).registration
            #expect(reread.registrationID == registration.registrationID)
            #expect(reread.platform == registration.platform)
            #expect(reread.pushChannel == registration.pushChannel)
            #expect(reread.tags == registration.tags)
            #expect(reread.template == registration.template)
        }
    }

    @Test func projectionIDsRoundTripAndNeverLookLikeStoredIDs() throws {
        for (installation, template) in [("phone-1", "t"), ("a/b c~d", "Template Name"), ("é🚀", "~")] {
            let native = RegistrationID.projection(installationID: installation)
            let templated = RegistrationID.projection(installationID: installation, templateName: template)
            #expect(RegistrationID.parseProjection(native)! == (installation, nil))
            #expect(RegistrationID.parseProjection(templated)! == (installation, template))
            #expect(throws: HubError.self) { try RegistrationID.validate(native) }
            #expect(native.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") })
        }
        #expect(RegistrationID.parseProjection("~!!") == nil)
        #expect(RegistrationID.parseProjection("plain") == nil)
        let generated = RegistrationID.generate()
        try RegistrationID.validate(generated)
        #expect(generated.split(separator: "-").count == 3)
    }

    @Test(arguments: [
        ("*", ETagCondition.exists), ("\"*\"", .exists), ("\"3\"", .equals(3)), ("W/\"7\"", .equals(7)), ("12", .equals(12)),
    ])
    func parsesIfMatch(header: String, condition: ETagCondition) throws {
        #expect(try ETagCondition(ifMatch: header) == condition)
    }

    /// Only the quoted star the .NET SDK sends is read as `*`; other spellings stay refused.
    @Test(arguments: ["W/\"*\"", "\"**\"", "'*'", "\"*", "*\"", "\"-1\"", ""])
    func refusesOtherIfMatchForms(header: String) {
        #expect(throws: HubError.self) { try ETagCondition(ifMatch: header) }
    }
}
