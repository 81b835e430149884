import Foundation
import HMS
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import Testing

@Suite struct HMSValidationTests {
    static let adapter = try! HMSAdapter(
        settings: HMSSettings(appID: "10000001", clientSecret: "s"), logger: Logger.forTest("test"))

    @Test(arguments: [
        "IQAAAACy0Kj4AAD3hGjH3uCXwN0N4o9o5z4b2w-Yh0kX6n1t8Yw",
        "0864343020000123456789012345678900000000000000000001CN01",
        "AKtCwq1fQ_1234567890:abcdefghijklmnopqrstuvwxyz+/=",
    ])
    func wellFormedTokensAreAccepted(token: String) throws {
        try Self.adapter.validate(pushChannel: .handle(token), platform: .hms)
    }

    @Test(arguments: [
        "short",  // fewer than 32 characters
        "IQAAAACy0Kj4AAD3hGjH3uCXwN0N4o9o5z 4b2w",  // a space
        String(repeating: "A", count: 513),  // too long
        "IQAAAACy0Kj4AAD3hGjH3uCXwN0N4o9o5z4b2w\u{e9}",  // not ASCII
    ])
    func malformedTokensAreRefusedWithTheRule(token: String) {
        #expect {
            try Self.adapter.validate(pushChannel: .handle(token), platform: .hms)
        } throws: { error in
            (error as? HubError)?.code == .invalidPushChannel && (error as? HubError)?.message.contains(HMSAdapter.tokenRule) == true
        }
        #expect(throws: HubError.self) { try Self.adapter.validate(pushChannel: .object(["endpoint": .string("x")]), platform: .hms) }
    }

    @Test func malformedTokensAreRefusedAtRegistration() throws {
        let adapters = try AdapterSet([Self.adapter])
        #expect(throws: HubError.self) {
            try adapters.validate(pushChannel: .handle("not a token"), platform: .hms)
        }
        try adapters.validate(pushChannel: .handle(HMSHarness.token("ok")), platform: .hms)
    }

    @Test(arguments: [
        (#"{"message":{"data":"x"}}"#, nil),
        (#"{"message":{"notification":{"title":"t"}}}"#, nil),
        (#"{"validate_only":false,"message":{"android":{"notification":{"title":"t"}}}}"#, nil),
        (#"{"message":{"data":{"k":"v"}}}"#, "message.data must be a string"),
        (#"{"message":{"data":"x","token":["a"]}}"#, "message.token is set by the hub"),
        (#"{"message":{"android":{"ttl":"10s"}}}"#, "needs data, notification or android.notification"),
        (#"{"data":"x"}"#, "holds \"message\""),
        ("[1]", "is a JSON object"),
    ] as [(String, String?)])
    func payloadsFollowPushKitsMessageRules(body: String, problem: String?) {
        let content = NotificationContent(format: .hms, body: ByteBuffer(string: body), headers: [:])
        if let problem {
            #expect {
                try Self.adapter.validate(notification: content)
            } throws: { error in
                (error as? HubError)?.message.contains(problem) == true
            }
        } else {
            #expect(throws: Never.self) { try Self.adapter.validate(notification: content) }
        }
    }

    @Test func payloadsAboveTheLimitAreTooLarge() {
        let body = #"{"message":{"data":""# + String(repeating: "x", count: 4100) + #""}}"#
        #expect {
            try Self.adapter.validate(notification: NotificationContent(format: .hms, body: ByteBuffer(string: body), headers: [:]))
        } throws: { error in
            (error as? HubError)?.code == .payloadTooLarge
        }
    }

    @Test func theDescriptorNamesThePlatformAndNoAzureDescription() throws {
        let adapters = try AdapterSet([Self.adapter])
        #expect(adapters.platforms == [.hms])
        #expect(adapters.formats == [.hms, .template])
        #expect(adapters.telemetryName(for: .hms) == "Hms")
        #expect(adapters.registrationXML.formats.isEmpty)
        #expect(adapters.sample(for: .hms) != nil)
        let sample = try #require(adapters.sample(for: .hms))
        try Self.adapter.validate(notification: NotificationContent(format: .hms, body: ByteBuffer(string: sample.body), headers: [:]))
    }
}
