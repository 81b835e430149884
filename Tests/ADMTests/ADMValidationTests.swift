import ADM
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import Testing

@Suite struct ADMValidationTests {
    static let adapter = try! ADMAdapter(
        settings: ADMSettings(clientID: "amzn1.application-oa2-client.abc", clientSecret: "s"), logger: Logger.forTest("test"))

    @Test(arguments: [
        "amzn1.adm-registration.v2.123",  // Azure's .NET SDK test data
        "amzn1.adm-registration.v3.Y29tLmFtYXpvbi5EZXZpY2VNZXNzYWdpbmcuUmVnaXN0cmF0aW9uSWRFbmNyeXB0aW9uS2V5ITEhOE9r",
        "amzn1.adm-registration.v3.ab/cd+ef==",
    ])
    func wellFormedRegistrationIdsAreAccepted(id: String) throws {
        try Self.adapter.validate(pushChannel: .handle(id), platform: .adm)
    }

    @Test(arguments: [
        "a1b2c3",  // an APNs-like token
        "amzn1.adm-registration.",  // the prefix alone
        "amzn1.adm-registration.v3.has space",
        "amzn1.adm-registration.v3." + String(repeating: "A", count: 2048),  // too long
        "amzn1.adm-registration.v3.caf\u{e9}",  // not ASCII
    ])
    func malformedRegistrationIdsAreRefusedWithTheRule(id: String) {
        #expect {
            try Self.adapter.validate(pushChannel: .handle(id), platform: .adm)
        } throws: { error in
            (error as? HubError)?.code == .invalidPushChannel
                && (error as? HubError)?.message.contains(ADMAdapter.registrationIDRule) == true
        }
        #expect(throws: HubError.self) { try Self.adapter.validate(pushChannel: .object(["endpoint": .string("x")]), platform: .adm) }
    }

    @Test(arguments: [
        (#"{"data":{"k":"v"}}"#, nil),
        (#"{"data":{},"consolidationKey":"Sync"}"#, nil),
        (#"{"data":{"k":"v"},"expiresAfter":60,"md5":"AAAAAAAAAAAAAAAAAAAAAA=="}"#, nil),
        (#"{"data":{"k":"v"},"expiresAfter":2678400}"#, nil),
        (#"{"data":{"k":1}}"#, "data.k is a number; ADM data values must be strings"),
        (#"{"data":"text"}"#, #"needs "data", an object of strings"#),
        (#"{"consolidationKey":"x"}"#, #"needs "data""#),
        (#"{"data":{},"notification":{}}"#, "not \"notification\""),
        (#"{"data":{},"consolidationKey":""}"#, "consolidationKey must be a string of 1 to 64 characters"),
        (#"{"data":{},"expiresAfter":59}"#, "expiresAfter must be whole seconds from 60"),
        (#"{"data":{},"expiresAfter":120.5}"#, "expiresAfter must be whole seconds"),
        (#"{"data":{},"expiresAfter":"60"}"#, "expiresAfter must be whole seconds"),
        (#"{"data":{},"md5":"not base64"}"#, "md5 must be the base64 MD5 checksum"),
        ("[1]", "is a JSON object"),
    ] as [(String, String?)])
    func payloadsFollowADMsMessageRules(body: String, problem: String?) {
        let content = NotificationContent(format: .adm, body: ByteBuffer(string: body), headers: [:])
        if let problem {
            #expect {
                try Self.adapter.validate(notification: content)
            } throws: { error in
                (error as? HubError)?.code == .invalidNotification && (error as? HubError)?.message.contains(problem) == true
            }
        } else {
            #expect(throws: Never.self) { try Self.adapter.validate(notification: content) }
        }
    }

    @Test func dataAboveSixKilobytesIsTooLarge() throws {
        // 6,144 bytes written without white space pass; one more does not. White space does not count.
        let fits = #"{"data":{"x":""# + String(repeating: "y", count: 6144 - 8) + #""}}"#
        try Self.adapter.validate(notification: NotificationContent(format: .adm, body: ByteBuffer(string: fits), headers: [:]))
        let spaced = #"{ "data" : { "x" : ""# + String(repeating: "y", count: 6144 - 8) + #"" } }"#
        try Self.adapter.validate(notification: NotificationContent(format: .adm, body: ByteBuffer(string: spaced), headers: [:]))
        let over = #"{"data":{"x":""# + String(repeating: "y", count: 6144 - 7) + #""}}"#
        #expect {
            try Self.adapter.validate(notification: NotificationContent(format: .adm, body: ByteBuffer(string: over), headers: [:]))
        } throws: { error in
            (error as? HubError)?.code == .payloadTooLarge && (error as? HubError)?.message.contains("6144") == true
        }
    }

    @Test func theDescriptorNamesThePlatformAndAzuresDescriptions() throws {
        let adapters = try AdapterSet([Self.adapter])
        #expect(adapters.platforms == [.adm])
        #expect(adapters.formats == [.adm, .template])
        #expect(adapters.telemetryName(for: .adm) == "Adm")
        let format = try #require(adapters.registrationXML.formats.first)
        #expect(adapters.registrationXML.formats.count == 1)
        #expect(format.nativeElement == "AdmRegistrationDescription")
        #expect(format.templateElement == "AdmTemplateRegistrationDescription")
        #expect(format.channelElements == ["AdmRegistrationId"])
        #expect(format.templateElements == [.templateName])
        #expect(ADMAdapterFactory.registrationFormats == [format])
        let sample = try #require(adapters.sample(for: .adm))
        try Self.adapter.validate(notification: NotificationContent(format: .adm, body: ByteBuffer(string: sample.body), headers: [:]))
    }
}
