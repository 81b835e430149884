import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import Testing
import Xiaomi

@Suite struct XiaomiValidationTests {
    static let adapter = try! XiaomiAdapter(
        settings: XiaomiSettings(appSecret: "s", packageNames: ["com.example.app"]), logger: Logger.forTest("test"))

    @Test(arguments: [
        "d//igwEhgBGCI2TG6lWqlK3Vr1VdNjOlMmjYbrd3xTE=",
        "hRY3mOgJ4KPlJXW7Tv1yO6ZKBuV9YdLr+aB/cD==",
        "GL:0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f",
    ])
    func wellFormedRegistrationIdsAreAccepted(id: String) throws {
        try Self.adapter.validate(pushChannel: .handle(id), platform: .xiaomi)
    }

    @Test(arguments: [
        "short",  // too short
        "d//igwEhgBGCI2TG6lWqlK3Vr1,VdNjOlMmjYbrd3xTE=",  // a comma would split the id in registration_id
        "d//igwEhgBGCI2TG6lWqlK3 Vr1VdNjOlMmjYbrd3xTE=",
        String(repeating: "A", count: 513),
        "d//igwEhgBGCI2TG6lWqlK3Vr1VdNjOlMmjYbrd3xT\u{e9}",
    ])
    func malformedRegistrationIdsAreRefusedWithTheRule(id: String) {
        #expect {
            try Self.adapter.validate(pushChannel: .handle(id), platform: .xiaomi)
        } throws: { error in
            (error as? HubError)?.code == .invalidPushChannel
                && (error as? HubError)?.message.contains(XiaomiAdapter.registrationIDRule) == true
        }
        #expect(throws: HubError.self) { try Self.adapter.validate(pushChannel: .object(["endpoint": .string("x")]), platform: .xiaomi) }
    }

    @Test(arguments: [
        (#"{"title":"Hi","description":"There"}"#, nil),
        (#"{"title":"Hi","description":"There","payload":"{\"k\":1}","notify_type":-1,"time_to_live":60000,"notify_id":0,"extra":{"notify_effect":"1"}}"#, nil),
        (#"{"pass_through":1,"payload":"data"}"#, nil),
        (#"{"title":"Hi","description":"There","notify_type":7,"time_to_send":1800000000000}"#, nil),
        (#"{"description":"There"}"#, "a notification message (pass_through 0) needs title"),
        (#"{"title":"  ","description":"There"}"#, "needs title, not blank"),
        (#"{"title":"Hi"}"#, "needs description"),
        (#"{"pass_through":1}"#, "a pass-through message (pass_through 1) needs payload"),
        (#"{"pass_through":2,"payload":"x"}"#, "pass_through must be 0"),
        (#"{"title":"Hi","description":"There","payload":{"k":1}}"#, "payload must be a string, not a JSON object"),
        (#"{"title":"Hi","description":"There","notify_type":0}"#, "notify_type must be -1"),
        (#"{"title":"Hi","description":"There","notify_type":8}"#, "notify_type must be -1"),
        (#"{"title":"Hi","description":"There","time_to_live":0}"#, "time_to_live must be a positive number of milliseconds"),
        (#"{"title":"Hi","description":"There","time_to_live":1.5}"#, "time_to_live must be a positive number"),
        (#"{"title":"Hi","description":"There","time_to_live":1e300}"#, "time_to_live must be a positive number"),
        (#"{"title":"Hi","description":"There","notify_id":-1}"#, "notify_id must be an integer from 0"),
        (#"{"title":"Hi","description":"There","extra":{"n":1}}"#, "extra.n is a number; extra values must be strings"),
        (#"{"title":"Hi","description":"There","extra":"x"}"#, "extra must be an object of strings"),
        (#"{"title":"Hi","description":"There","registration_id":"abc"}"#, "registration_id is set by the hub"),
        (#"{"title":"Hi","description":"There","restricted_package_name":"a.b"}"#, "restricted_package_name is set by the hub"),
        (#"{"title":"Hi","description":"There","color":"red"}"#, #"not "color""#),
        ("[1]", "is a JSON object"),
    ] as [(String, String?)])
    func payloadsFollowMiPushsMessageRules(body: String, problem: String?) {
        let content = NotificationContent(format: .xiaomi, body: ByteBuffer(string: body), headers: [:])
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

    @Test func titlesAndDescriptionsAreShorterThanTheirLimitsCountedInCharacters() throws {
        func content(_ title: String, _ description: String) -> NotificationContent {
            NotificationContent(
                format: .xiaomi, body: ByteBuffer(string: JSONValue.object(["title": .string(title), "description": .string(description)]).jsonString()),
                headers: [:])
        }
        // 49 Chinese characters are 49 characters (147 bytes): they fit; 50 do not.
        try Self.adapter.validate(notification: content(String(repeating: "推", count: 49), String(repeating: "送", count: 127)))
        #expect {
            try Self.adapter.validate(notification: content(String(repeating: "推", count: 50), "d"))
        } throws: { error in (error as? HubError)?.message == "title must be shorter than 50 characters; it has 50" }
        #expect {
            try Self.adapter.validate(notification: content("t", String(repeating: "送", count: 128)))
        } throws: { error in (error as? HubError)?.message == "description must be shorter than 128 characters; it has 128" }
    }

    @Test func payloadAndBodyLimitsAreTooLarge() throws {
        let fits = #"{"pass_through":1,"payload":""# + String(repeating: "y", count: 4096) + #""}"#
        try Self.adapter.validate(notification: NotificationContent(format: .xiaomi, body: ByteBuffer(string: fits), headers: [:]))
        let over = #"{"pass_through":1,"payload":""# + String(repeating: "y", count: 4097) + #""}"#
        #expect {
            try Self.adapter.validate(notification: NotificationContent(format: .xiaomi, body: ByteBuffer(string: over), headers: [:]))
        } throws: { error in
            (error as? HubError)?.code == .payloadTooLarge && (error as? HubError)?.message.contains("payload is at most 4096 bytes") == true
        }
        let huge = #"{"pass_through":1,"payload":"x","extra":{"k":""# + String(repeating: "y", count: 8200) + #""}}"#
        #expect {
            try Self.adapter.validate(notification: NotificationContent(format: .xiaomi, body: ByteBuffer(string: huge), headers: [:]))
        } throws: { error in (error as? HubError)?.code == .payloadTooLarge }
    }

    @Test func theFormBodyCarriesEveryMemberAndTheHubsTarget() throws {
        let message = try XiaomiMessage(
            payload: ByteBuffer(string: #"{"title":"Hi & bye","description":"d","payload":"{\"k\":\"a+b\"}","extra":{"notify_effect":"1"}}"#))
        let body = String(buffer: message.body(registrationIDs: ["id/1+", "id2="], packageNames: ["com.a.b", "com.c.d"], timeToLive: 5000))
        let fields = body.split(separator: "&").map(String.init)
        #expect(fields == [
            "title=Hi%20%26%20bye", "description=d", "payload=%7B%22k%22%3A%22a%2Bb%22%7D", "pass_through=0",
            "extra.notify_effect=1", "time_to_live=5000", "restricted_package_name=com.a.b%2Ccom.c.d",
            "registration_id=id%2F1%2B%2Cid2%3D",
        ])
        // A time_to_live of the message's own wins over one from the send's expiry.
        let own = try XiaomiMessage(payload: ByteBuffer(string: #"{"pass_through":1,"payload":"p","time_to_live":70000}"#))
        let ownBody = String(buffer: own.body(registrationIDs: ["r"], packageNames: ["com.a.b"], timeToLive: 5000))
        #expect(ownBody.contains("time_to_live=70000") && !ownBody.contains("time_to_live=5000"))
    }

    @Test func theDescriptorNamesThePlatformAndAzuresDescriptions() throws {
        let adapters = try AdapterSet([Self.adapter])
        #expect(adapters.platforms == [.xiaomi])
        #expect(adapters.formats == [.template, .xiaomi])
        #expect(adapters.telemetryName(for: .xiaomi) == "Xiaomi")
        let format = try #require(adapters.registrationXML.formats.first)
        #expect(adapters.registrationXML.formats.count == 1)
        #expect(format.nativeElement == "XiaomiRegistrationDescription")
        #expect(format.templateElement == "XiaomiTemplateRegistrationDescription")
        #expect(format.channelElements == ["XiaomiRegistrationId"])
        #expect(format.templateElements == [.templateName])
        #expect(XiaomiAdapterFactory.registrationFormats == [format])
        let sample = try #require(adapters.sample(for: .xiaomi))
        try Self.adapter.validate(notification: NotificationContent(format: .xiaomi, body: ByteBuffer(string: sample.body), headers: [:]))
    }
}
