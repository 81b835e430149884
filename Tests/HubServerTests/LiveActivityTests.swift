import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import HummingbirdTesting
import NIOCore
import NotificationHub
import PushEmulator
import Testing

/// Live Activities end to end: tokens registered under an apns installation, starts, updates and ends sent with
/// `POST /{hub}/liveactivities/messages` and read back from what the APNs emulator received.
@Suite struct LiveActivityTests {
    typealias Harness = LiveActivityHarness

    @Test func startUpdateAndEndReachOnlyTheirTokensWithTheLiveActivityPayloadAndHeaders() async throws {
        try await Harness.run { hub in
            let device = Harness.token("d", 1)
            let pushToStart = Harness.token("s", 1)
            let activity = Harness.token("a", 1)
            try await hub.registerInstallation("phone", token: device)
            #expect(try await hub.registerPushToStart("phone", token: pushToStart).status == .ok)
            let registered = try await hub.registerActivity("phone", "match-1234", token: activity, tags: ["match:1234"])
            #expect(registered.status == .ok, "\(registered.text)")
            let view = try JSONValue(parsing: Array(registered.body.readableBytesView)).objectValue
            #expect(view?["activityId"] == "match-1234" && view?["attributesType"] == "MatchAttributes")
            #expect(view?["tags"] == ["match:1234"], "the hub's own tags are not shown")

            // Start: to the push-to-start tokens of the devices the expression matches, nothing else.
            let before = Date().timeIntervalSince1970.rounded(.down)
            let start = try await hub.send(
                #"{"event":"start","tags":"$InstallationId:{phone}","attributesType":"MatchAttributes","attributes":{"home":"A","away":"B"},"contentState":{"score":"0-0"},"alert":{"title":"Kick-off","body":"A v B"},"inputPushToken":true,"relevanceScore":0.5}"#)
            let started = try await hub.final(start)
            #expect(started.summary.counts == [Platform("apnspushtostart"): [.success: 1]])
            #expect(start.headers[.location]?.hasSuffix("/demo/messages/\(try Harness.trackingID(start))") == true)
            #expect(hub.emulator.received.map(\.deviceToken) == [pushToStart])
            let startPush = try #require(hub.emulator.received.first)
            #expect(startPush.headers["apns-push-type"] == "liveactivity")
            #expect(startPush.headers["apns-topic"] == "com.example.app.push-type.liveactivity")
            #expect(startPush.headers["apns-priority"] == "10")
            let startAPS = try Harness.aps(startPush)
            #expect(startAPS["event"] == "start")
            #expect(startAPS["attributes-type"] == "MatchAttributes")
            #expect(startAPS["attributes"] == ["home": "A", "away": "B"])
            #expect(startAPS["content-state"] == ["score": "0-0"])
            #expect(startAPS["alert"] == ["title": "Kick-off", "body": "A v B"])
            #expect(startAPS["input-push-token"] == 1)
            #expect(startAPS["relevance-score"] == .number(0.5))
            guard case .number(let timestamp)? = startAPS["timestamp"] else {
                Issue.record("no timestamp")
                return
            }
            #expect(timestamp >= before && timestamp <= Date().timeIntervalSince1970 && timestamp.rounded() == timestamp)
            #expect(startPush.payload.contains(#""timestamp":\#(Int(timestamp))"#), "whole seconds, written as an integer")

            // Update by activity id: the activity's token only.
            let update = try await hub.send(
                #"{"event":"update","activityId":"match-1234","contentState":{"score":"1-0"},"staleDate":1900000000,"priority":5}"#)
            #expect(try await hub.final(update).summary.counts == [Platform("apnsactivity"): [.success: 1]])
            let updatePush = try #require(hub.emulator.received.last)
            #expect(updatePush.deviceToken == activity)
            #expect(updatePush.headers["apns-priority"] == "5")
            #expect(updatePush.headers["apns-topic"] == "com.example.app.push-type.liveactivity")
            let updateAPS = try Harness.aps(updatePush)
            #expect(updateAPS["event"] == "update" && updateAPS["content-state"] == ["score": "1-0"])
            #expect(updateAPS["stale-date"] == 1_900_000_000 && updateAPS["attributes"] == nil)

            // End by the activity's own tag.
            let end = try await hub.send(#"{"event":"end","tags":"match:1234","dismissalDate":1900000100}"#)
            #expect(try await hub.final(end).summary.counts == [Platform("apnsactivity"): [.success: 1]])
            let endAPS = try Harness.aps(try #require(hub.emulator.received.last))
            #expect(endAPS["event"] == "end" && endAPS["dismissal-date"] == 1_900_000_100 && endAPS["content-state"] == nil)

            #expect(hub.received(by: device).isEmpty, "the app's device token gets no Live Activity push")
            #expect(hub.received(by: pushToStart).count == 1, "the push-to-start token gets starts only")
            #expect(hub.received(by: activity).count == 2, "the activity token gets updates and ends only")
            #expect(hub.emulator.violations.isEmpty, "\(hub.emulator.violations)")
        }
    }

    @Test func startsGoToPushToStartTokensAndUpdatesToActivityTokensWhateverTheTagsMatch() async throws {
        try await Harness.run { hub in
            // Both kinds carry the user's tag; the event decides which kind a send reaches.
            let alice = try await SecurePushTests.token(user: "alice")
            try await hub.registerInstallation("alice-phone", token: Harness.token("d", 2), bearer: alice)
            #expect(try await hub.registerPushToStart("alice-phone", token: Harness.token("s", 2), bearer: alice).status == .ok)
            #expect(try await hub.registerActivity("alice-phone", "ride-1", token: Harness.token("a", 2), bearer: alice).status == .ok)
            #expect(try await hub.registerActivity("alice-phone", "ride-2", token: Harness.token("a", 3), bearer: alice).status == .ok)

            let start = try await hub.send(
                #"{"event":"start","tags":"$UserId:{alice}","attributesType":"RideAttributes","attributes":{},"contentState":{"eta":5}}"#)
            #expect(try await hub.final(start).summary.counts == [Platform("apnspushtostart"): [.success: 1]])
            #expect(hub.emulator.received.map(\.deviceToken) == [Harness.token("s", 2)])

            let update = try await hub.send(#"{"event":"update","tags":"$UserId:{alice}","contentState":{"eta":3}}"#)
            #expect(try await hub.final(update).summary.counts == [Platform("apnsactivity"): [.success: 2]])
            #expect(Set(hub.emulator.received.dropFirst().map(\.deviceToken)) == [Harness.token("a", 2), Harness.token("a", 3)])

            // $ActivityId names one activity; the user's other activity is not reached.
            let end = try await hub.send(#"{"event":"end","tags":"$ActivityId:{ride-2}"}"#)
            #expect(try await hub.final(end).summary.counts == [Platform("apnsactivity"): [.success: 1]])
            #expect(hub.emulator.received.last?.deviceToken == Harness.token("a", 3))
        }
    }

    @Test func anotherUsersInstallationIsOutOfReachAndAnswered404() async throws {
        try await Harness.run { hub in
            let alice = try await SecurePushTests.token(user: "alice")
            let bob = try await SecurePushTests.token(user: "bob")
            try await hub.registerInstallation("alice-phone", token: Harness.token("d", 4), bearer: alice)
            for response in [
                try await hub.registerPushToStart("alice-phone", token: Harness.token("s", 4), bearer: bob),
                try await hub.registerActivity("alice-phone", "a1", token: Harness.token("a", 4), bearer: bob),
                try await hub.request(.get, "/demo/installations/alice-phone/liveactivities", bearer: bob),
                try await hub.request(.delete, "/demo/installations/alice-phone/liveactivities/a1", bearer: bob),
            ] {
                // As the installation API answers another user's installation: as one that does not exist.
                #expect(response.status == .notFound, "\(response.text)")
                #expect(Harness.code(response) == "InstallationNotFound")
            }
            #expect(try await hub.hub.installations.subResources(of: "alice-phone").isEmpty)
            // Bob may not tag alice's activity with his own user-bound tag either way; alice may tag her own.
            let foreign = try await hub.registerActivity("alice-phone", "a1", token: Harness.token("a", 4), tags: ["username:bob"], bearer: alice)
            #expect(foreign.status == .forbidden && Harness.code(foreign) == "UserMismatch")
            let own = try await hub.registerActivity("alice-phone", "a1", token: Harness.token("a", 4), tags: ["username:alice"], bearer: alice)
            #expect(own.status == .ok, "\(own.text)")
            let rows = try await hub.hub.installations.subResources(of: "alice-phone")
            #expect(rows.map(\.userID) == ["alice"], "the activity takes its installation's user")
            #expect(rows.first?.routingTags.contains("$UserId:{alice}") == true)
        }
    }

    @Test func registrationsAreListedReplacedAndDeletedWithTheirInstallation() async throws {
        try await Harness.run { hub in
            try await hub.registerInstallation("phone", token: Harness.token("d", 5))
            #expect(try await hub.registerPushToStart("phone", token: Harness.token("s", 5)).status == .ok)
            #expect(try await hub.registerActivity("phone", "b", token: Harness.token("a", 6)).status == .ok)
            #expect(try await hub.registerActivity("phone", "a", token: Harness.token("a", 5), tags: ["x"]).status == .ok)
            // Replacing an activity keeps one row.
            #expect(try await hub.registerActivity("phone", "a", token: Harness.token("a", 7), tags: ["y"]).status == .ok)
            let listed = try await hub.request(.get, "/demo/installations/phone/liveactivities")
            #expect(listed.status == .ok)
            let list = try #require(try JSONValue(parsing: Array(listed.body.readableBytesView)).objectValue)
            #expect(list["installationId"] == "phone")
            #expect(list["pushToStart"]?.objectValue?["pushToken"] == .string(Harness.token("s", 5)))
            let activityValues = try #require(list["activities"]?.arrayValue)
            let activities = activityValues.compactMap(\.objectValue)
            #expect(activities.map { $0["activityId"] } == ["a", "b"])
            #expect(activities[0]["pushToken"] == .string(Harness.token("a", 7)) && activities[0]["tags"] == ["y"])

            // The rows cannot be reached as installations.
            let direct = try await hub.request(.get, "/demo/installations/phone%2Fliveactivities%2Fpushtostart")
            #expect(direct.status == .badRequest && Harness.code(direct) == "InvalidIdentifier")

            #expect(try await hub.request(.delete, "/demo/installations/phone/liveactivities/b").status == .noContent)
            #expect(try await hub.request(.delete, "/demo/installations/phone/liveactivities/pushtostart").status == .noContent)
            #expect(try await hub.request(.delete, "/demo/installations/phone/liveactivities/never-registered").status == .noContent)
            #expect(try await hub.hub.installations.subResources(of: "phone").map(\.pushChannel) == [.handle(Harness.token("a", 7))])

            #expect(try await hub.registerActivity("phone", "c", token: Harness.token("a", 8)).status == .ok)
            #expect(try await hub.request(.delete, "/demo/installations/phone").status == .noContent)
            #expect(try await hub.hub.installations.subResources(of: "phone").isEmpty, "deleting the installation deletes its Live Activity rows")
            #expect(try await hub.request(.get, "/demo/installations/phone/liveactivities").status == .notFound)

            // Deleting the installation through Azure's registration API (its native projection) does the same.
            try await hub.registerInstallation("tablet", token: Harness.token("d", 6))
            #expect(try await hub.registerActivity("tablet", "a", token: Harness.token("a", 20)).status == .ok)
            let projection = RegistrationID.projection(installationID: "tablet")
            #expect(try await hub.request(.delete, "/demo/registrations/\(projection)", key: "manage").status == .ok)
            #expect(try await hub.hub.installations.installation(id: "tablet", as: .unrestricted) == nil)
            #expect(try await hub.hub.installations.subResources(of: "tablet").isEmpty)
        }
    }

    @Test func anEndedActivitysTokenIsPrunedWhenAPNsAnswers410() async throws {
        try await Harness.run { hub in
            try await hub.registerInstallation("phone", token: Harness.token("d", 9))
            #expect(try await hub.registerActivity("phone", "live", token: Harness.token("a", 9)).status == .ok)
            #expect(try await hub.registerActivity("phone", "done", token: Harness.token("a", 10)).status == .ok)
            // The activity ended on the device after its token was registered: APNs answers the token 410
            // Unregistered with that time (an earlier time would leave the row, as updated since).
            hub.emulator.setDevice(Harness.token("a", 10), .unregistered(Date().addingTimeInterval(1)))
            let update = try await hub.send(#"{"event":"update","tags":"$InstallationId:{phone}","contentState":{"n":1}}"#)
            let record = try await hub.final(update)
            #expect(record.summary.counts == [Platform("apnsactivity"): [.success: 1, .expiredChannel: 1]])
            func activities() async throws -> [[String: JSONValue]] {
                let listed = try await hub.request(.get, "/demo/installations/phone/liveactivities")
                let listedValue = try JSONValue(parsing: Array(listed.body.readableBytesView))
                return try #require(listedValue.objectValue?["activities"]?.arrayValue).compactMap(\.objectValue)
            }
            try await hub.eventually { try await activities().first?["pushChannelExpired"] == true }
            let listed = try await activities()
            #expect(listed.map { $0["activityId"] } == ["done", "live"])
            #expect(listed.map { $0["pushChannelExpired"] } == [true, false])

            // Pruned tokens are skipped by later sends.
            let again = try await hub.send(#"{"event":"update","tags":"$InstallationId:{phone}","contentState":{"n":2}}"#)
            #expect(try await hub.final(again).summary.counts == [Platform("apnsactivity"): [.success: 1]])
            #expect(hub.received(by: Harness.token("a", 10)).isEmpty)
        }
    }

    @Test func underTheDeletePolicyAnEndedActivitysRowGoes() async throws {
        try await Harness.run(expiredChannelPolicy: .delete) { hub in
            try await hub.registerInstallation("phone", token: Harness.token("d", 11))
            #expect(try await hub.registerActivity("phone", "done", token: Harness.token("a", 11)).status == .ok)
            hub.emulator.setDevice(Harness.token("a", 11), .unregistered(Date().addingTimeInterval(1)))
            let end = try await hub.send(#"{"event":"end","activityId":"done"}"#)
            #expect(try await hub.final(end).summary.counts == [Platform("apnsactivity"): [.expiredChannel: 1]])
            try await hub.eventually { try await hub.hub.installations.subResources(of: "phone").isEmpty }
            #expect(try await hub.hub.installations.subResources(of: "phone").isEmpty)
        }
    }

    @Test func telemetryCountsLiveActivityOutcomesUnderTheirOwnNames() async throws {
        try await Harness.run { hub in
            try await hub.registerInstallation("phone", token: Harness.token("d", 12))
            #expect(try await hub.registerPushToStart("phone", token: Harness.token("s", 12)).status == .ok)
            #expect(try await hub.registerActivity("phone", "a", token: Harness.token("a", 12)).status == .ok)
            hub.emulator.setDevice(Harness.token("a", 12), .reply(status: 400, reason: "BadDeviceToken"))
            let update = try await hub.send(#"{"event":"update","activityId":"a","contentState":{}}"#)
            _ = try await hub.final(update)
            let start = try await hub.send(
                #"{"event":"start","tags":"$InstallationId:{phone}","attributesType":"T","attributes":{},"contentState":{}}"#)
            _ = try await hub.final(start)
            let updateDetails = try await hub.api.request(
                .get, "/demo/messages/\(try Harness.trackingID(update))", key: "send", acceptJSON: false)
            #expect(updateDetails.text.contains("<ApnsLiveActivityOutcomeCounts><Outcome><Name>BadChannel</Name><Count>1</Count></Outcome></ApnsLiveActivityOutcomeCounts>"), "\(updateDetails.text)")
            let startDetails = try await hub.api.request(
                .get, "/demo/messages/\(try Harness.trackingID(start))", key: "send", acceptJSON: false)
            #expect(startDetails.text.contains("<ApnsPushToStartOutcomeCounts><Outcome><Name>Success</Name><Count>1</Count></Outcome></ApnsPushToStartOutcomeCounts>"), "\(startDetails.text)")
            #expect(startDetails.text.contains("<TargetPlatforms>apnspushtostart</TargetPlatforms>"))
        }
    }

    @Test func aScheduledEndIsSentAtItsTimeStampedWithIt() async throws {
        try await Harness.run { hub in
            try await hub.registerInstallation("phone", token: Harness.token("d", 13))
            #expect(try await hub.registerActivity("phone", "match", token: Harness.token("a", 13)).status == .ok)
            let time = Date().addingTimeInterval(2).timeIntervalSince1970.rounded(.up)
            let scheduled = try await hub.send(
                #"{"event":"end","activityId":"match","contentState":{"final":true},"scheduledTime":"\#(HubDateFormat.string(from: Date(timeIntervalSince1970: time)))"}"#)
            #expect(scheduled.status == .created, "\(scheduled.text)")
            let id = try Harness.trackingID(scheduled)
            #expect(scheduled.headers[.location]?.hasSuffix("/demo/schedulednotifications/\(id)") == true)
            let record = try await hub.api.waitForFinal(id)
            #expect(record.scheduledTime.map { $0.timeIntervalSince1970 } == time)
            #expect(record.summary.counts == [Platform("apnsactivity"): [.success: 1]])
            let push = try #require(hub.received(by: Harness.token("a", 13)).first)
            #expect(push.receivedAt.timeIntervalSince1970 >= time, "not sent before its time")
            // Stamped with the scheduled time, so the device does not take it for older than updates sent meanwhile.
            #expect(try Harness.aps(push)["timestamp"] == .number(time))
            #expect(try Harness.aps(push)["event"] == "end")
        }
    }

    @Test func sendsAreIdempotentAndTheAzureStyleSendIsCheckedAsALiveActivity() async throws {
        try await Harness.run { hub in
            try await hub.registerInstallation("phone", token: Harness.token("d", 14))
            #expect(try await hub.registerActivity("phone", "a", token: Harness.token("a", 14)).status == .ok)
            let body = #"{"event":"update","activityId":"a","contentState":{"n":1}}"#
            let first = try await hub.send(body, headers: [HTTPField.Name("Idempotency-Key")!: "k1"])
            let second = try await hub.send(body, headers: [HTTPField.Name("Idempotency-Key")!: "k1"])
            #expect(try Harness.trackingID(first) == Harness.trackingID(second))
            _ = try await hub.final(first)

            // A plain send in format liveactivity: accepted when its body is a Live Activity payload.
            var headers: HTTPFields = [HTTPField.Name("ServiceBusNotification-Format")!: "liveactivity"]
            headers[HTTPField.Name("ServiceBusNotification-Tags")!] = "$ActivityId:{a}"
            let plain = try await hub.request(
                .post, "/demo/messages", key: "send",
                body: #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"n":2}}}"#, headers: headers)
            #expect(try await hub.final(plain).summary.counts == [Platform("apnsactivity"): [.success: 1]])
            #expect(hub.emulator.received.last?.headers["apns-push-type"] == "liveactivity")
            #expect(hub.received(by: Harness.token("a", 14)).count == 2)
            let refused = try await hub.request(
                .post, "/demo/messages", key: "send", body: #"{"aps":{"event":"update","content-state":{"n":2}}}"#, headers: headers)
            #expect(refused.status == .badRequest && Harness.code(refused) == "InvalidNotification")
            #expect(refused.text.contains("aps.timestamp is required"))
            // A direct start to one push-to-start token, in format liveactivitystart.
            var direct: HTTPFields = [HTTPField.Name("ServiceBusNotification-Format")!: "liveactivitystart"]
            direct[HTTPField.Name("ServiceBusNotification-DeviceHandle")!] = Harness.token("s", 14)
            let started = try await hub.request(
                .post, "/demo/messages?direct", key: "send",
                body: #"{"aps":{"timestamp":1767225600,"event":"start","content-state":{},"attributes-type":"T","attributes":{}}}"#,
                headers: direct)
            #expect(try await hub.final(started).summary.counts == [Platform("apnspushtostart"): [.success: 1]])
            #expect(hub.received(by: Harness.token("s", 14)).first?.headers["apns-topic"] == "com.example.app.push-type.liveactivity")
            // An update sent as the start format is refused: the format says which tokens it is for.
            let mismatched = try await hub.request(
                .post, "/demo/messages?direct", key: "send",
                body: #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{}}}"#, headers: direct)
            #expect(mismatched.status == .badRequest && mismatched.text.contains("a liveactivitystart send starts activities"))
            #expect(hub.emulator.violations.isEmpty)
        }
    }
}
