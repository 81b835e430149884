import Foundation
import HubTestSupport
import NotificationHub
import Testing

/// Registration descriptions come from the formats adapters declare; the core knows none of its own.
@Suite struct DeclaredRegistrationFormatTests {
    static let format = RegistrationFormat(
        platform: Platform("pigeon"), prefix: "Pigeon", channel: .element("Loft"), filterMatching: .anyCase,
        templateElements: [.templateName, .priority(header: "x-pigeon-priority", values: ["high", "low"])])
    static let xml = RegistrationXML(formats: [format])
    static let connect = RegistrationFixtures.connect

    @Test func aDeclaredFormatIsReadAndWritten() throws {
        let entry = RegistrationFixtures.entry(
            "<PigeonTemplateRegistrationDescription \(Self.connect)><Tags>a</Tags><Loft>L-1</Loft><BodyTemplate><![CDATA[{\"m\":\"$(m)\"}]]></BodyTemplate><TemplateName>t</TemplateName><Priority>high</Priority></PigeonTemplateRegistrationDescription>")
        let parsed = try Self.xml.parseEntry(Array(entry.utf8))
        #expect(parsed.registration.platform == Platform("pigeon"))
        #expect(parsed.registration.pushChannel == .handle("L-1"))
        let template = try #require(parsed.registration.template)
        #expect(template.installationTemplate.headers == ["x-pigeon-priority": "high"])
        let written = Self.xml.description(parsed.registration)
        #expect(written.hasPrefix("<PigeonTemplateRegistrationDescription"))
        #expect(written.contains("<Loft>L-1</Loft>") && written.contains("<Priority>high</Priority>"))
    }

    @Test func descriptionsOfUndeclaredFormatsAreRefusedNamingTheDeclaredOnes() {
        let apple = RegistrationFixtures.entry(
            "<AppleRegistrationDescription \(Self.connect)><DeviceToken>0F1E</DeviceToken></AppleRegistrationDescription>")
        #expect {
            _ = try Self.xml.parseEntry(Array(apple.utf8))
        } throws: { error in
            let message = (error as? HubError)?.message ?? ""
            return message.contains("PigeonRegistrationDescription") && !message.contains("Windows")
        }
    }

    @Test func aDescriptionOfAKnownPlatformTheHubDoesNotServeIsAnUnknownPlatform() {
        let xml = RegistrationXML(formats: [Self.format], unserved: AzureRegistrationFormats.all)
        let gcm = RegistrationFixtures.entry(
            "<GcmRegistrationDescription \(Self.connect)><GcmRegistrationId>g</GcmRegistrationId></GcmRegistrationDescription>")
        #expect {
            _ = try xml.parseEntry(Array(gcm.utf8))
        } throws: { error in
            (error as? HubError)?.code == .unknownPlatform && (error as? HubError)?.message.contains("'gcm'") == true
        }
        let mpns = RegistrationFixtures.entry(
            "<MpnsRegistrationDescription \(Self.connect)><ChannelUri>x</ChannelUri></MpnsRegistrationDescription>")
        #expect {
            _ = try xml.parseEntry(Array(mpns.utf8))
        } throws: { error in
            (error as? HubError)?.code == .invalidRegistration
        }
    }

    @Test func aPlatformWithoutAFormatIsNotDescribed() {
        let registration = Registration(registrationID: "r", platform: Platform("other"), pushChannel: .handle("h"))
        #expect(Self.xml.description(registration).isEmpty)
        #expect(Self.xml.format(of: Platform("other")) == nil)
    }

    // MARK: A handle joined from several elements

    static let joined = RegistrationFormat(
        platform: Platform("kite"), prefix: "Kite", channel: .joined(["KiteUser", "KiteLine"], separator: "-"),
        templateElements: [.templateName, .headerValue(element: "Mode", header: "X-Kite-Mode", values: ["0", "1"])])
    static let joinedXML = RegistrationXML(formats: [joined])

    @Test func aJoinedHandleIsStoredAsOneStringAndWrittenBackAsItsElements() throws {
        let entry = RegistrationFixtures.entry(
            "<KiteRegistrationDescription \(Self.connect)><Tags>a</Tags><KiteUser>u1</KiteUser><KiteLine>line-9-x</KiteLine></KiteRegistrationDescription>")
        let parsed = try Self.joinedXML.parseEntry(Array(entry.utf8))
        // Only the first separator splits: the last element may hold it.
        #expect(parsed.registration.pushChannel == .handle("u1-line-9-x"))
        let written = Self.joinedXML.description(parsed.registration)
        #expect(written.contains("<KiteUser>u1</KiteUser><KiteLine>line-9-x</KiteLine>"))
        #expect(Self.joined.channelElements == ["KiteUser", "KiteLine"])
        #expect(Self.joined.parts(ofJoined: "u1-line-9-x") == ["u1", "line-9-x"])
        #expect(Self.joined.parts(ofJoined: "nosep") == nil)
        #expect(Self.joined.parts(ofJoined: "-x") == nil)
        #expect(Self.format.parts(ofJoined: "a-b") == nil)
    }

    @Test(arguments: [
        ("<KiteUser>u-1</KiteUser><KiteLine>l</KiteLine>", "<KiteUser> must not hold '-'"),
        ("<KiteUser>u</KiteUser>", "needs a non-empty <KiteLine>"),
        ("<KiteUser></KiteUser><KiteLine>l</KiteLine>", "needs a non-empty <KiteUser>"),
    ])
    func aJoinedHandleThatWouldNotReadBackIsRefused(elements: String, problem: String) {
        let entry = RegistrationFixtures.entry("<KiteRegistrationDescription \(Self.connect)>\(elements)</KiteRegistrationDescription>")
        #expect {
            _ = try Self.joinedXML.parseEntry(Array(entry.utf8))
        } throws: { error in
            (error as? HubError)?.code == .invalidRegistration && (error as? HubError)?.message.contains(problem) == true
        }
    }

    @Test func anElementSentAsAHeaderIsReadWrittenAndRendered() throws {
        let entry = RegistrationFixtures.entry(
            "<KiteTemplateRegistrationDescription \(Self.connect)><KiteUser>u</KiteUser><KiteLine>l</KiteLine><BodyTemplate><![CDATA[{\"m\":\"$(m)\"}]]></BodyTemplate><TemplateName>t</TemplateName><Mode>1</Mode></KiteTemplateRegistrationDescription>")
        let parsed = try Self.joinedXML.parseEntry(Array(entry.utf8))
        let template = try #require(parsed.registration.template)
        #expect(template.installationTemplate.headers == ["X-Kite-Mode": "1"])
        #expect(Self.joinedXML.description(parsed.registration).hasSuffix("<TemplateName>t</TemplateName><Mode>1</Mode></KiteTemplateRegistrationDescription>"))
        #expect(Self.joined.priority?.element == "Mode" && Self.format.priority?.element == "Priority")
        let priority = RegistrationFixtures.entry(
            "<KiteTemplateRegistrationDescription \(Self.connect)><KiteUser>u</KiteUser><KiteLine>l</KiteLine><BodyTemplate>{}</BodyTemplate><Priority>1</Priority></KiteTemplateRegistrationDescription>")
        #expect(throws: HubError.self) { _ = try Self.joinedXML.parseEntry(Array(priority.utf8)) }
    }
}
