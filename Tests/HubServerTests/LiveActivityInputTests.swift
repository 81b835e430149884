import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import HummingbirdTesting
import NotificationHub
import Testing

/// Bad input to the Live Activity endpoints: each a 400 (or 409) with a code that says what to fix, and nothing
/// stored or enqueued.
@Suite struct LiveActivityInputTests {
    typealias Harness = LiveActivityHarness

    static let start = #""event":"start","tags":"t","attributesType":"T","attributes":{},"contentState":{}"#

    /// Each bad send with the code it gets.
    static let badSends: [(body: String, code: String)] = [
        (#"{"event":"update","activityId":"a"}"#, "MissingContentState"),
        (#"{"event":"start","tags":"t","attributesType":"T","attributes":{}}"#, "MissingContentState"),
        (#"{"event":"pause","activityId":"a","contentState":{}}"#, "InvalidEvent"),
        (#"{"event":5,"activityId":"a","contentState":{}}"#, "InvalidEvent"),
        (#"{"activityId":"a","contentState":{}}"#, "MissingEvent"),
        (#"{"event":"update","activityId":"a","contentState":{},"attributes":{}}"#, "StartOnlyField"),
        (#"{"event":"end","activityId":"a","attributesType":"T"}"#, "StartOnlyField"),
        (#"{"event":"update","activityId":"a","contentState":{},"inputPushToken":true}"#, "StartOnlyField"),
        (#"{"event":"start","tags":"t","contentState":{}}"#, "MissingAttributes"),
        (#"{"event":"start","tags":"t","attributesType":"T","contentState":{}}"#, "MissingAttributes"),
        (#"{"event":"start","tags":"t","attributesType":"T","attributes":[],"contentState":{}}"#, "InvalidAttributes"),
        (#"{"event":"start","tags":"t","attributesType":"9T","attributes":{},"contentState":{}}"#, "InvalidAttributesType"),
        (#"{\#(start),"inputPushToken":1}"#, "InvalidInputPushToken"),
        (#"{"event":"start","activityId":"a","attributesType":"T","attributes":{},"contentState":{}}"#, "InvalidTarget"),
        (#"{"event":"update","activityId":"a","tags":"t","contentState":{}}"#, "AmbiguousTarget"),
        (#"{"event":"update","contentState":{}}"#, "MissingTarget"),
        (#"{"event":"update","activityId":"a b","contentState":{}}"#, "InvalidActivityId"),
        (#"{"event":"update","tags":"  ","contentState":{}}"#, "InvalidTagExpression"),
        (#"{"event":"update","tags":"a &&","contentState":{}}"#, "InvalidTagExpression"),
        (#"{"event":"update","activityId":"a","contentState":{},"priority":1}"#, "InvalidPriority"),
        (#"{"event":"update","activityId":"a","contentState":{},"priority":"10"}"#, "InvalidPriority"),
        (#"{"event":"update","activityId":"a","contentState":{},"staleDate":"tomorrow"}"#, "InvalidDate"),
        (#"{"event":"update","activityId":"a","contentState":{},"staleDate":1.5}"#, "InvalidDate"),
        (#"{"event":"end","activityId":"a","dismissalDate":-1}"#, "InvalidDate"),
        (#"{"event":"end","activityId":"a","dismissalDate":1767225600000}"#, "InvalidDate"),
        (#"{"event":"update","activityId":"a","contentState":{},"relevanceScore":"high"}"#, "InvalidRelevanceScore"),
        (#"{"event":"update","activityId":"a","contentState":[1]}"#, "InvalidContentState"),
        (#"{"event":"update","activityId":"a","contentState":"x"}"#, "InvalidContentState"),
        (#"{"event":"end","activityId":"a","contentState":null}"#, "InvalidContentState"),
        (#"{"event":"update","activityId":"a","contentState":{},"alert":"Goal"}"#, "InvalidAlert"),
        (#"{"event":"update","activityId":"a","contentState":{},"scheduledTime":"soon"}"#, "InvalidScheduleTime"),
        (#"{"event":"update","activityId":"a","contentState":{},"content-state":{}}"#, "UnknownField"),
        (#"{"event":"update","activityId":"a","contentState":{"text":"\#(String(repeating: "x", count: 4100))"}}"#, "PayloadTooLarge"),
        (#"[1]"#, "InvalidBody"),
        (#"not json"#, "InvalidBody"),
    ]

    @Test func everyBadSendIsA400WithItsCodeAndNothingIsEnqueued() async throws {
        try await Harness.run { hub in
            for (body, code) in Self.badSends {
                let response = try await hub.send(body)
                #expect(response.status == .badRequest, "\(body.prefix(120)): \(response.text)")
                #expect(Harness.code(response) == code, "\(body.prefix(120)): \(response.text)")
            }
            #expect(try await hub.notificationCount() == 0)
            // The same shapes, well formed, are accepted (the cases above fail for the reason they name).
            #expect(try await hub.send(#"{"event":"update","activityId":"a","contentState":{},"priority":5}"#).status == .created)
            #expect(try await hub.send(#"{\#(Self.start),"inputPushToken":false}"#).status == .created)
            #expect(try await hub.send(#"{"event":"end","activityId":"a","dismissalDate":0}"#).status == .created)
        }
    }

    @Test func sendsNeedTheSendRight() async throws {
        try await Harness.run { hub in
            let response = try await hub.request(
                .post, "/demo/liveactivities/messages", key: "listen", body: #"{"event":"update","activityId":"a","contentState":{}}"#)
            #expect(response.status == .forbidden)
            #expect(try await hub.notificationCount() == 0)
        }
    }

    @Test func badRegistrationsAre400sAndStoreNothing() async throws {
        try await Harness.run { hub in
            try await hub.registerInstallation("phone", token: Harness.token("d", 1))
            let cases: [(path: String, body: String, code: String)] = [
                ("liveactivities/\(String(repeating: "a", count: 65))", #"{"pushToken":"\#(Harness.token("a", 1))","attributesType":"T"}"#, "InvalidActivityId"),
                ("liveactivities/a~b", #"{"pushToken":"\#(Harness.token("a", 1))","attributesType":"T"}"#, "InvalidActivityId"),
                ("liveactivities/a", #"{"pushToken":"xyz","attributesType":"T"}"#, "InvalidPushChannel"),
                ("liveactivities/a", #"{"pushToken":"abcd","attributesType":"T"}"#, "InvalidPushChannel"),
                ("liveactivities/a", #"{"pushToken":7,"attributesType":"T"}"#, "InvalidPushChannel"),
                ("liveactivities/a", #"{"attributesType":"T"}"#, "MissingPushToken"),
                ("liveactivities/a", #"{"pushToken":"\#(Harness.token("a", 1))"}"#, "MissingAttributesType"),
                ("liveactivities/a", #"{"pushToken":"\#(Harness.token("a", 1))","attributesType":"A B"}"#, "InvalidAttributesType"),
                ("liveactivities/a", #"{"pushToken":"\#(Harness.token("a", 1))","attributesType":"T","tags":["$ActivityId:{b}"]}"#, "InvalidTag"),
                ("liveactivities/a", #"{"pushToken":"\#(Harness.token("a", 1))","attributesType":"T","tags":"x"}"#, "InvalidTag"),
                ("liveactivities/a", #"{"pushToken":"\#(Harness.token("a", 1))","attributesType":"T","extra":1}"#, "UnknownField"),
                ("liveactivities/a", "[]", "InvalidLiveActivity"),
                ("liveactivities/pushtostart", #"{"pushToken":"\#(Harness.token("s", 1))","attributesType":"T"}"#, "UnknownField"),
                ("liveactivities/pushtostart", #"{"pushToken":"12"}"#, "InvalidPushChannel"),
            ]
            for (path, body, code) in cases {
                let response = try await hub.request(.put, "/demo/installations/phone/\(path)", body: body)
                #expect(response.status == .badRequest, "\(path) \(body): \(response.text)")
                #expect(Harness.code(response) == code, "\(path) \(body): \(response.text)")
            }
            #expect(try await hub.hub.installations.subResources(of: "phone").isEmpty)

            // The installation must exist and be an apns one.
            let missing = try await hub.registerPushToStart("nobody", token: Harness.token("s", 1))
            #expect(missing.status == .notFound && Harness.code(missing) == "InstallationNotFound")
            let other = try await hub.request(
                .put, "/demo/installations/tester", body: #"{"installationId":"tester","platform":"test","pushChannel":"dev-1"}"#)
            #expect(other.status == .ok, "\(other.text)")
            let wrong = try await hub.registerActivity("tester", "a", token: Harness.token("a", 1))
            #expect(wrong.status == .badRequest && Harness.code(wrong) == "WrongPlatform")
            #expect(try await hub.hub.installations.subResources(of: "tester").isEmpty)
        }
    }

    @Test func aTokenOfOneKindGivenAsTheOtherIsRefused() async throws {
        try await Harness.run { hub in
            try await hub.registerInstallation("phone", token: Harness.token("d", 2))
            #expect(try await hub.registerPushToStart("phone", token: Harness.token("s", 2)).status == .ok)
            #expect(try await hub.registerActivity("phone", "live", token: Harness.token("a", 2)).status == .ok)
            // The push-to-start token as an activity's token (in another case: hex compares without case).
            let asActivity = try await hub.registerActivity("phone", "new", token: Harness.token("s", 2).uppercased())
            #expect(asActivity.status == .badRequest && Harness.code(asActivity) == "PushToStartTokenAsActivityToken", "\(asActivity.text)")
            // An activity's token as the push-to-start token.
            let asPushToStart = try await hub.registerPushToStart("phone", token: Harness.token("a", 2))
            #expect(asPushToStart.status == .badRequest && Harness.code(asPushToStart) == "ActivityTokenAsPushToStartToken")
            #expect(asPushToStart.text.contains("'live'"))
            let rows = try await hub.hub.installations.subResources(of: "phone")
            #expect(Set(rows.compactMap(\.pushChannel.handle)) == [Harness.token("s", 2), Harness.token("a", 2)], "nothing changed")
        }
    }

    @Test func anInstallationHoldsAtMost32Activities() async throws {
        try await Harness.run { hub in
            try await hub.registerInstallation("phone", token: Harness.token("d", 3))
            for index in 0..<32 {
                #expect(try await hub.registerActivity("phone", "act-\(index)", token: Harness.token("a", 100 + index)).status == .ok)
            }
            let over = try await hub.registerActivity("phone", "act-32", token: Harness.token("a", 200))
            #expect(over.status == .conflict && Harness.code(over) == "TooManyActivities", "\(over.text)")
            // Replacing one of the 32 is no new activity.
            #expect(try await hub.registerActivity("phone", "act-0", token: Harness.token("a", 201)).status == .ok)
            #expect(try await hub.request(.delete, "/demo/installations/phone/liveactivities/act-1").status == .noContent)
            #expect(try await hub.registerActivity("phone", "act-32", token: Harness.token("a", 200)).status == .ok)
            #expect(try await hub.hub.installations.subResources(of: "phone").count == 32)
        }
    }
}
