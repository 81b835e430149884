import Baidu
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@Suite struct BaiduValidationTests {
    static let adapter = try! BaiduAdapter(
        settings: BaiduSettings(apiKey: "Ljc710pzAa99GULCo8y48NvB", secretKey: "s"), logger: Logger.forTest("test"))
    static let iosAdapter = try! BaiduAdapter(
        settings: BaiduSettings(apiKey: "Ljc710pzAa99GULCo8y48NvB", secretKey: "s", deviceType: .ios), logger: Logger.forTest("test"))

    @Test(arguments: [
        "1061541468263391234-3748092266370017686",
        "user_1-12345",
        "u-1",
    ])
    func wellFormedChannelsAreAccepted(handle: String) throws {
        try Self.adapter.validate(pushChannel: .handle(handle), platform: .baidu)
    }

    @Test(arguments: [
        "3748092266370017686",  // a channel id alone: Azure's handle is {userId}-{channelId}
        "-3748092266370017686",  // no user id
        "1061541468263391234-",  // no channel id
        "user-name-3748092266370017686",  // the user id ends at the first '-'; "name-…" is not digits
        "1061541468263391234-37480922663700176ab",
        "us er-123",
        "1061541468263391234-" + String(repeating: "1", count: 65),
    ])
    func malformedChannelsAreRefusedWithTheRule(handle: String) {
        #expect {
            try Self.adapter.validate(pushChannel: .handle(handle), platform: .baidu)
        } throws: { error in
            (error as? HubError)?.code == .invalidPushChannel && (error as? HubError)?.message.contains(BaiduAdapter.channelRule) == true
        }
        #expect(throws: HubError.self) { try Self.adapter.validate(pushChannel: .object(["endpoint": .string("x")]), platform: .baidu) }
    }

    @Test(arguments: [
        (#"{"title":"t","description":"d"}"#, "1", nil),
        (#"{"description":"d","custom_content":{"k":"v"},"open_type":3,"url":"http://x"}"#, "1", nil),
        (#"{"anything":1}"#, nil, nil),
        (#"{"anything":1}"#, "0", nil),
        (#"{"title":"t"}"#, "1", #"needs "description""#),
        (#"{"description":"d","title":3}"#, "1", "title is a number; it must be a string"),
        (#"{"description":"d","open_type":1.5}"#, "1", "open_type must be a whole number"),
        (#"{"description":"d","custom_content":"x"}"#, "1", "custom_content is a string"),
        (#"{"description":"d"}"#, "2", "X-Baidu-Message-Type must be 0 (a pass-through message) or 1 (a notification)"),
        ("plain text", nil, "a baidu payload is the msg JSON object"),
        ("[1]", nil, "a baidu payload is the msg JSON object"),
    ] as [(String, String?, String?)])
    func payloadsFollowBaidusMessageRules(body: String, messageType: String?, problem: String?) {
        var headers = NotificationHeaders()
        if let messageType { headers["X-Baidu-Message-Type"] = messageType }
        let content = NotificationContent(format: .baidu, body: ByteBuffer(string: body), headers: headers)
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

    @Test func iosNotificationsNeedAnAps() throws {
        let headers: NotificationHeaders = ["X-Baidu-Message-Type": "1"]
        try Self.iosAdapter.validate(
            notification: NotificationContent(format: .baidu, body: ByteBuffer(string: #"{"aps":{"alert":"a"}}"#), headers: headers))
        #expect {
            try Self.iosAdapter.validate(
                notification: NotificationContent(format: .baidu, body: ByteBuffer(string: #"{"description":"d"}"#), headers: headers))
        } throws: { error in
            (error as? HubError)?.message.contains(#"needs an "aps" object"#) == true
        }
    }

    @Test func messagesAboveFourKilobytesAreTooLarge() throws {
        let fits = #"{"x":""# + String(repeating: "y", count: 4096 - 8) + #""}"#
        try Self.adapter.validate(notification: NotificationContent(format: .baidu, body: ByteBuffer(string: fits), headers: [:]))
        let over = #"{"x":""# + String(repeating: "y", count: 4096 - 7) + #""}"#
        #expect {
            try Self.adapter.validate(notification: NotificationContent(format: .baidu, body: ByteBuffer(string: over), headers: [:]))
        } throws: { error in
            (error as? HubError)?.code == .payloadTooLarge && (error as? HubError)?.message.contains("4096") == true
        }
    }

    @Test func theSignatureIsTheMD5OfTheURLEncodedRequestText() {
        // Computed independently: MD5 of PHP-urlencode("POST" + URL + sorted k=v + secret).
        let parameters = [
            "apikey": "Ljc710pzAa99GULCo8y48NvB", "channel_id": "3748092266370017686", "msg_type": "1",
            "msg": #"{"title":"hi there","description":"café & co"}"#, "timestamp": "1427174155",
        ]
        let url = "http://api.tuisong.baidu.com/rest/3.0/push/single_device"
        let expected = "d2a92e19e92019c1cee7952ab6d81403"
        #expect(BaiduSignature.sign(method: "POST", url: url, parameters: parameters, secretKey: "secret42") == expected)
        // The emulator's own implementation agrees.
        #expect(BaiduEmulator.sign(url: url, parameters: parameters, secretKey: "secret42") == expected)
        #expect(BaiduSignature.urlEncode("a b~*é-_.") == "a+b%7E%2A%C3%A9-_.")
    }

    @Test func theDescriptorNamesThePlatformAndAzuresDescriptions() throws {
        let adapters = try AdapterSet([Self.adapter])
        #expect(adapters.platforms == [.baidu])
        #expect(adapters.formats == [.baidu, .template])
        #expect(adapters.telemetryName(for: .baidu) == "Baidu")
        let format = try #require(adapters.registrationXML.formats.first)
        #expect(format.nativeElement == "BaiduRegistrationDescription")
        #expect(format.templateElement == "BaiduTemplateRegistrationDescription")
        #expect(format.channelElements == ["BaiduUserId", "BaiduChannelId"])
        #expect(format.templateElements.map(\.name) == ["TemplateName", "MessageType"])
        #expect(format.priority?.header == "X-Baidu-Message-Type")
        #expect(BaiduAdapterFactory.registrationFormats == [format])
        let sample = try #require(adapters.sample(for: .baidu))
        try Self.adapter.validate(
            notification: NotificationContent(format: .baidu, body: ByteBuffer(string: sample.body), headers: NotificationHeaders(sample.headers.map { (name: $0.key, value: $0.value) })))
    }
}
