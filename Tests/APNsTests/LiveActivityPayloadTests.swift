import Crypto
import Foundation
import NIOCore
import NIOHPACK
import NotificationHub
import Testing

@testable import APNs
@testable import PushEmulator

/// Live Activity pushes in the adapter and the emulator: the payload rules at accept time, the request the adapter
/// builds for `apnspushtostart` and `apnsactivity` rows, and the emulator's own check of ActivityKit's rules.
@Suite struct LiveActivityPayloadTests {
    static let update = #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"n":1}}}"#
    static let start =
        #"{"aps":{"timestamp":1767225600,"event":"start","content-state":{},"attributes-type":"T","attributes":{},"alert":{"title":"x"},"input-push-token":1}}"#

    /// Payloads the rules refuse, with a word of the message that says why.
    static let badPayloads: [(format: NotificationFormat, body: String, message: String)] = [
        (.liveActivity, #"{"aps":{"event":"update","content-state":{}}}"#, "aps.timestamp is required"),
        (.liveActivity, #"{"aps":{"timestamp":"now","event":"update","content-state":{}}}"#, "aps.timestamp must be"),
        (.liveActivity, #"{"aps":{"timestamp":1767225600000,"event":"update","content-state":{}}}"#, "not milliseconds"),
        (.liveActivity, #"{"aps":{"timestamp":1.5,"event":"update","content-state":{}}}"#, "aps.timestamp must be"),
        (.liveActivity, #"{"aps":{"timestamp":1,"content-state":{}}}"#, "aps.event is required"),
        (.liveActivity, #"{"aps":{"timestamp":1,"event":"pause","content-state":{}}}"#, "is not an event"),
        (.liveActivity, #"{"aps":{"timestamp":1,"event":true}}"#, "aps.event must be the string"),
        (.liveActivity, #"{"aps":{"timestamp":1,"event":"update"}}"#, "aps.content-state is required"),
        (.liveActivity, #"{"aps":{"timestamp":1,"event":"end","content-state":[1]}}"#, "aps.content-state must be a JSON object"),
        (.liveActivity, #"{"aps":{"timestamp":1,"event":"update","content-state":{},"attributes":{}}}"#, "belongs to a start only"),
        (.liveActivity, #"{"aps":{"timestamp":1,"event":"end","input-push-token":1}}"#, "belongs to a start only"),
        (.liveActivity, start, "send \"start\" in format liveactivitystart"),
        (.liveActivityStart, update, "aps.event must be \"start\""),
        (.liveActivityStart, #"{"aps":{"timestamp":1,"event":"start","content-state":{},"attributes":{}}}"#, "aps.attributes-type is required"),
        (.liveActivityStart, #"{"aps":{"timestamp":1,"event":"start","content-state":{},"attributes-type":""}}"#, "aps.attributes-type must be"),
        (.liveActivityStart, #"{"aps":{"timestamp":1,"event":"start","content-state":{},"attributes-type":"T"}}"#, "aps.attributes is required"),
        (.liveActivityStart, #"{"aps":{"timestamp":1,"event":"start","content-state":{},"attributes-type":"T","attributes":"x"}}"#, "aps.attributes must be"),
        (.liveActivityStart, #"{"aps":{"timestamp":1,"event":"start","content-state":{},"attributes-type":"T","attributes":{},"input-push-token":true}}"#, "input-push-token must be 1"),
        (.liveActivity, #"{"aps":{"timestamp":1,"event":"end","stale-date":-5}}"#, "aps.stale-date must be"),
        (.liveActivity, #"{"aps":{"timestamp":1,"event":"end","dismissal-date":"later"}}"#, "aps.dismissal-date must be"),
        (.liveActivity, #"{"aps":{"timestamp":1,"event":"end","relevance-score":"1"}}"#, "aps.relevance-score must be"),
        (.liveActivity, #"{"aps":{"timestamp":1,"event":"end","alert":5}}"#, "aps.alert must be"),
        (.liveActivity, #"{"timestamp":1,"event":"end"}"#, "\"aps\" dictionary"),
        (.liveActivity, #"[]"#, "JSON object"),
    ]

    @Test func theAdapterRefusesEveryBrokenRuleWithAMessageNamingIt() async throws {
        try await APNsHarness.with { (hub) async throws in
            for (format, body, message) in Self.badPayloads {
                do throws(HubError) {
                    try hub.adapter.validate(notification: NotificationContent(format: format, body: body))
                    Issue.record("accepted \(body)")
                } catch {
                    #expect(error.code == .invalidNotification, "\(body)")
                    #expect(error.message.contains(message), "\(body): \(error.message)")
                }
            }
            try hub.adapter.validate(notification: NotificationContent(format: .liveActivity, body: Self.update))
            try hub.adapter.validate(notification: NotificationContent(format: .liveActivityStart, body: Self.start))
            try hub.adapter.validate(
                notification: NotificationContent(format: .liveActivity, body: #"{"aps":{"timestamp":0,"event":"end"}}"#, headers: ["apns-priority": "5"]))
            // Headers: the push type is liveactivity's, the priority 5 or 10.
            let badHeaders: [(headers: NotificationHeaders, message: String)] = [
                (["apns-push-type": "alert"], "apns-push-type must be liveactivity"),
                (["apns-priority": "1"], "apns-priority 5 or 10"),
                (["apns-topic": "com.other.app"], "is not one of this hub's apps"),
            ]
            for (headers, message) in badHeaders {
                do throws(HubError) {
                    try hub.adapter.validate(notification: NotificationContent(format: .liveActivity, body: Self.update, headers: headers))
                    Issue.record("accepted \(headers)")
                } catch {
                    #expect(error.message.contains(message), "\(error.message)")
                }
            }
            let large = #"{"aps":{"timestamp":1,"event":"update","content-state":{"t":"\#(String(repeating: "x", count: 4100))"}}}"#
            #expect(throws: HubError.self) {
                try hub.adapter.validate(notification: NotificationContent(format: .liveActivity, body: large))
            }
        }
    }

    @Test func theDescriptorServesBothLiveActivityPlatformsUnderTheirTelemetryNames() throws {
        let descriptor = APNsAdapter.descriptor
        #expect(descriptor.platforms == [.apns, .apnsPushToStart, .apnsActivity, .apnsBroadcast])
        #expect(descriptor.formats[.liveActivityStart] == [.apnsPushToStart])
        #expect(descriptor.formats[.liveActivity] == [.apnsActivity, .apnsBroadcast], "an update reaches tokens and the tag's channel")
        #expect(descriptor.telemetryName(for: .apnsBroadcast) == "ApnsBroadcast")
        #expect(descriptor.formats[.apple] == [.apns], "plain apple sends never reach a Live Activity token")
        #expect(descriptor.templateFormats.keys.sorted() == [.apns], "templates never reach a Live Activity token")
        #expect(descriptor.telemetryName(for: .apnsActivity) == "ApnsLiveActivity")
        #expect(descriptor.telemetryName(for: .apnsPushToStart) == "ApnsPushToStart")
        #expect(descriptor.registrationFormats.map(\.platform) == [.apns])
        for format in [NotificationFormat.liveActivity, .liveActivityStart] {
            let sample = try #require(descriptor.samples[format])
            _ = try APNsLiveActivityPayload(validating: ByteBuffer(string: sample.body), format: format)
        }
    }

    @Test func liveActivityRowsAreSentAsLiveActivityPushesWhateverTheHeadersSay() async throws {
        try await APNsHarness.with { (hub) async throws in
            let token = APNsHarness.deviceToken(7)
            // Even with an alert push type in its headers, a delivery to an activity token is a liveactivity push.
            let delivery = Delivery(
                notificationID: "n1", installationID: "phone/liveactivities/activities/a", platform: .apnsActivity,
                pushChannel: .handle(token), format: .apple, payload: ByteBuffer(string: Self.update),
                headers: ["apns-push-type": "alert", "apns-priority": "5"])
            let results = await hub.adapter.deliver([delivery], context: .standalone())
            #expect(results == [.success])
            let received = try #require(hub.emulator.received.first)
            #expect(received.headers["apns-push-type"] == "liveactivity")
            #expect(received.headers["apns-topic"] == APNsHarness.topic + ".push-type.liveactivity")
            #expect(received.headers["apns-priority"] == "5")
            #expect(hub.emulator.violations.isEmpty)
        }
    }

    @Test func theEmulatorChecksActivityKitsRulesOnLiveActivityPushes() async throws {
        try await APNsHarness.with { (hub) async throws in
            // Direct sends to a handle skip nothing in the emulator: each broken rule is a BadPayload and a violation.
            let bad: [(body: String, violation: String)] = [
                (#"{"aps":{"event":"update","content-state":{}}}"#, "without aps.timestamp"),
                (#"{"aps":{"timestamp":1767225600000,"event":"update","content-state":{}}}"#, "timestamp is not a number of UNIX seconds"),
                (#"{"aps":{"timestamp":"1","event":"update","content-state":{}}}"#, "timestamp is not a number of UNIX seconds"),
                (#"{"aps":{"timestamp":1}}"#, "without a string aps.event"),
                (#"{"aps":{"timestamp":1,"event":"stop"}}"#, "is not start, update or end"),
                (#"{"aps":{"timestamp":1,"event":"update"}}"#, "update without aps.content-state"),
                (#"{"aps":{"timestamp":1,"event":"update","content-state":3}}"#, "content-state is not a dictionary"),
                (#"{"aps":{"timestamp":1,"event":"start","content-state":{}}}"#, "start without a string aps.attributes-type"),
                (#"{"aps":{"timestamp":1,"event":"start","content-state":{},"attributes-type":"T"}}"#, "start without an aps.attributes dictionary"),
                (#"{"aps":{"timestamp":1,"event":"start","content-state":{},"attributes-type":"T","attributes":{},"input-push-token":2}}"#, "input-push-token is not 1"),
                (#"{"aps":{"timestamp":1,"event":"update","content-state":{},"attributes-type":"T"}}"#, "update with aps.attributes-type"),
                (#"{"aps":{"timestamp":1,"event":"end","dismissal-date":"x"}}"#, "dismissal-date is not a number of UNIX seconds"),
                (#"{"aps":{"timestamp":1,"event":"end","relevance-score":true}}"#, "relevance-score is not a number"),
            ]
            let token = APNsHarness.deviceToken(8)
            for (body, _) in bad {
                let summary = try await hub.sendDirect(body, headers: ["apns-push-type": "liveactivity"], to: [token])
                #expect(summary.counts == [.apns: [.invalidNotificationFormat: 1]], "\(body)")
            }
            let violations = hub.emulator.violations
            #expect(violations.count == bad.count)
            for (index, (_, violation)) in bad.enumerated() where index < violations.count {
                #expect(violations[index].hasPrefix("BadPayload: liveactivity") && violations[index].contains(violation), "\(violations[index])")
            }
            // Priority 1 is no Live Activity priority.
            let low = try await hub.sendDirect(Self.update, headers: ["apns-push-type": "liveactivity", "apns-priority": "1"], to: [token])
            #expect(low.counts == [.apns: [.invalidNotificationFormat: 1]])
            #expect(hub.emulator.violations.last?.hasPrefix("BadPriority: liveactivity push with priority 1") == true)
            // What follows the rules is accepted.
            for body in [Self.update, Self.start, #"{"aps":{"timestamp":0,"event":"end","dismissal-date":1767229200,"relevance-score":0.25}}"#] {
                let summary = try await hub.sendDirect(body, headers: ["apns-push-type": "liveactivity"], to: [token])
                #expect(summary.counts == [.apns: [.success: 1]], "\(body)")
            }
            #expect(hub.emulator.violations.count == bad.count + 1)
        }
    }
}
