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
}
