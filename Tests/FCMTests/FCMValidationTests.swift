import FCM
import Foundation
import NIOCore
import NotificationHub
import Testing

@Suite struct FCMValidationTests {
    static func withAdapters<T>(_ body: (AdapterSet) async throws -> T) async throws -> T {
        let account = try FCMServiceAccount(json: FCMHarness.serviceAccountJSON(port: 1))
        let adapter = try FCMAdapter(serviceAccount: account, logger: FCMHarness.logger)
        do {
            let result = try await body(try AdapterSet([adapter]))
            try await adapter.shutdown()
            return result
        } catch {
            try? await adapter.shutdown()
            throw error
        }
    }

    static func code(_ format: NotificationFormat, _ body: String, in adapters: AdapterSet) -> HubError.Code? {
        do {
            try adapters.validate(notification: NotificationHub.Notification(format: format, body: body, audience: .all))
            return nil
        } catch {
            return error.code
        }
    }

    @Test(arguments: [
        #"{"message":{"data":{"from":"x"}}}"#,
        #"{"message":{"data":{"message_type":"x"}}}"#,
        #"{"message":{"data":{"google.c.a":"x"}}}"#,
        #"{"message":{"data":{"gcm.n.e":"x"}}}"#,
        #"{"message":{"data":{"nested":{"a":"b"}}}}"#,
        #"{"message":{"data":{"list":[1]}}}"#,
        #"{"message":{"data":{"nothing":null}}}"#,
        #"{"message":{"token":"abc","data":{}}}"#,
        #"{"message":{"topic":"news"}}"#,
        #"{"message":{"unknown":1}}"#,
        #"{"message":{"android":"high"}}"#,
        #"{"msg":{}}"#,
        #"[1]"#,
        "not json",
    ])
    func invalidFCMv1PayloadsAreRejectedAtSendTime(body: String) async throws {
        try await Self.withAdapters { adapters in
            #expect(Self.code(.fcmv1, body, in: adapters) == .invalidNotification)
        }
    }

    @Test(arguments: [
        #"{"data":{"from":"x"}}"#,
        #"{"data":{"gcm.x":"x"}}"#,
        #"{"data":{"o":{}}}"#,
        #"{"to":"abc","data":{}}"#,
        #"{"registration_ids":["a"]}"#,
        #"{"priority":"urgent"}"#,
        #"{"time_to_live":-1}"#,
        #"{"time_to_live":2419201}"#,
        #"{"collapse_key":5}"#,
        #"{"notification":"x"}"#,
        #"{"notification":{"title":5}}"#,
        #"{"content_available":true}"#,
    ])
    func invalidGCMPayloadsAreRejectedAtSendTime(body: String) async throws {
        try await Self.withAdapters { adapters in
            #expect(Self.code(.gcm, body, in: adapters) == .invalidNotification)
        }
    }

    @Test func theAdapterHooksCarryFCMKnowledge() async throws {
        try await Self.withAdapters { adapters in
            #expect(adapters.telemetryName(for: .fcmv1) == "FcmV1")
            #expect(adapters.telemetryName(for: .gcm) == "Gcm")
            let announcements = adapters.secureAnnouncements(for: SecureAnnouncementRequest(id: "s1"))
            #expect(announcements.map(\.format) == [.fcmv1, .gcm])
            #expect(announcements.map(\.body) == [#"{"message":{"data":{"secureId":"s1"}}}"#, #"{"data":{"secureId":"s1"}}"#])
            for announcement in announcements {
                try adapters.validate(
                    notification: NotificationHub.Notification(format: announcement.format, body: announcement.body, audience: .all))
            }
        }
    }

    @Test func validPayloadsPassAndTooBigOnesDoNot() async throws {
        try await Self.withAdapters { adapters in
            #expect(Self.code(.fcmv1, #"{"message":{"data":{"a":"b","n":1,"t":false},"notification":{"title":"x"}}}"#, in: adapters) == nil)
            #expect(Self.code(.gcm, #"{"data":{"a":"b"},"notification":{"title":"x","sound":"default"},"priority":"normal","time_to_live":0}"#, in: adapters) == nil)
            #expect(Self.code(.fcmv1, #"{"message":{"data":{"a":"\#(String(repeating: "x", count: 4100))"}}}"#, in: adapters) == .payloadTooLarge)
            #expect(Self.code(.gcm, #"{"data":{"a":"\#(String(repeating: "x", count: 4080))"}}"#, in: adapters) == .payloadTooLarge)
            #expect(Self.code(.template, #"{"a":"b"}"#, in: adapters) == nil)
        }
    }

    @Test func dataRuleConvertsNumbersAndBooleansToJSONText() throws {
        let message = try FCMMessage(payload: ByteBuffer(string: #"{"data":{"i":42,"f":0.5,"t":true,"s":"x"}}"#), format: .gcm)
        #expect(message.members == #""data":{"f":"0.5","i":"42","s":"x","t":"true"}"#)
        #expect(String(buffer: message.body(token: #"a"b"#)) == #"{"message":{"token":"a\"b","data":{"f":"0.5","i":"42","s":"x","t":"true"}}}"#)
    }

    @Test(arguments: ["", "has space", "tab\there", "caf\u{e9}", String(repeating: "a", count: 4097)])
    func malformedRegistrationTokensAreRejected(token: String) async throws {
        try await Self.withAdapters { adapters in
            #expect(throws: HubError.self) { try adapters.validate(pushChannel: .handle(token), platform: .fcmv1) }
            #expect(throws: HubError.self) { try adapters.validate(pushChannel: .handle(token), platform: .gcm) }
        }
    }

    @Test func wellFormedTokensAndObjectsAreJudged() async throws {
        try await Self.withAdapters { adapters in
            try adapters.validate(pushChannel: .handle(FCMHarness.token("x")), platform: .fcmv1)
            try adapters.validate(pushChannel: .handle(String(repeating: "a", count: 4096)), platform: .gcm)
            #expect { try adapters.validate(pushChannel: .object(["endpoint": "x"]), platform: .fcmv1) } throws: {
                ($0 as? HubError)?.code == .invalidPushChannel
            }
            #expect(adapters.formats == [.fcmv1, .gcm, .template])
            #expect(adapters.platforms(for: .gcm) == [.gcm])
        }
    }
}
