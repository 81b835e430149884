import Crypto
import Foundation
import NIOCore
import NIOHPACK
import NotificationHub
import Testing

@testable import APNs
@testable import PushEmulator

/// The emulator's broadcast rules (channel management and broadcast sends), each refusal included, in process.
@Suite struct APNsBroadcastRulesTests {
    let clock = ManualWallClock()
    static let update = #"{"aps":{"event":"update","timestamp":1700000000,"content-state":{"score":"1-0"}}}"#

    func rules(maximumChannels: Int = 10_000) -> APNsBroadcastRules {
        APNsBroadcastRules(
            rules: APNsRequestRules(
                configuration: APNsEmulatorConfiguration(
                    teamID: APNsHarness.teamID, keyID: APNsHarness.keyID, publicKey: APNsHarness.signingKey.publicKey,
                    topics: [APNsHarness.topic], clock: clock, maximumChannelsPerApp: maximumChannels)))
    }

    func jwt() throws -> String {
        try APNsProviderToken(
            privateKeyPEM: APNsHarness.signingKey.pemRepresentation, teamID: APNsHarness.teamID, keyID: APNsHarness.keyID,
            clock: clock
        ).token()
    }

    func headers(_ fields: [(String, String)], authorization: String?) -> HPACKHeaders {
        var headers = HPACKHeaders()
        if let authorization { headers.add(name: "authorization", value: "bearer " + authorization) }
        for (name, value) in fields { headers.add(name: name, value: value) }
        return headers
    }

    /// One management request: status, reason, answer headers and body.
    func manage(
        _ rules: APNsBroadcastRules, _ method: String, _ path: String, _ fields: [(String, String)] = [], body: String? = nil,
        authorization: String?, environment: APNsEmulatorEnvironment = .production
    ) -> APNsAnswer {
        var state = APNsConnectionTokenState()
        return rules.manage(
            method: method, path: path, headers: headers(fields, authorization: authorization),
            body: body.map { ByteBuffer(string: $0) }, token: &state, environment: environment)
    }

    func broadcast(
        _ rules: APNsBroadcastRules, _ fields: [(String, String)], body: String? = update, method: String = "POST",
        path: String = "/4/broadcasts/apps/" + APNsHarness.topic, authorization: String?,
        environment: APNsEmulatorEnvironment = .production
    ) -> APNsAnswer {
        var state = APNsConnectionTokenState()
        return rules.broadcast(
            method: method, path: path, headers: headers(fields, authorization: authorization),
            body: body.map { ByteBuffer(string: $0) }, token: &state, environment: environment)
    }

    static func header(_ answer: APNsAnswer, _ name: String) -> String? { answer.headers.first { $0.name == name }?.value }

    static let channels = "/1/apps/\(APNsHarness.topic)/channels"
    static let createBody = #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#

    @Test func channelsAreCreatedReadListedAndDeleted() throws {
        let rules = rules()
        let token = try jwt()
        let created = manage(rules, "POST", Self.channels, body: Self.createBody, authorization: token)
        #expect(created.status == 201)
        let id = try #require(Self.header(created, "apns-channel-id"))
        #expect(Data(base64Encoded: id) != nil)
        #expect(Self.header(created, "apns-request-id").flatMap { UUID(uuidString: $0) } != nil)
        let requestID = "0a3c3f4e-2d5b-4c6a-9e8f-1b2c3d4e5f60"
        let read = manage(rules, "GET", Self.channels, [("apns-channel-id", id), ("apns-request-id", requestID)], authorization: token)
        #expect(read.status == 200)
        #expect(Self.header(read, "apns-request-id") == requestID)
        let object = try #require(try JSONValue(parsing: Data((read.body ?? "").utf8)).objectValue)
        #expect(object["message-storage-policy"] == .number(1))
        #expect(object["push-type"] == .string("LiveActivity"))
        let listed = manage(rules, "GET", "/1/apps/\(APNsHarness.topic)/all-channels", authorization: token)
        #expect(listed.status == 200)
        #expect(listed.body == JSONValue.object(["channels": .array([.string(id)])]).jsonString())
        // Channels belong to one environment.
        #expect(manage(rules, "GET", Self.channels, [("apns-channel-id", id)], authorization: token, environment: .sandbox).reason == "ChannelNotRegistered")
        #expect(manage(rules, "DELETE", Self.channels, [("apns-channel-id", id)], authorization: token).status == 204)
        #expect(manage(rules, "GET", Self.channels, [("apns-channel-id", id)], authorization: token).reason == "ChannelNotRegistered")
        #expect(manage(rules, "DELETE", Self.channels, [("apns-channel-id", id)], authorization: token).reason == "ChannelNotRegistered")
        #expect(rules.channels(in: nil).isEmpty)
        // An unknown channel is the platform's answer, not a broken rule.
        #expect(rules.rules.recorder.violations.isEmpty)
    }

    @Test func managementRefusals() throws {
        let rules = rules(maximumChannels: 1)
        let token = try jwt()
        func result(_ answer: APNsAnswer) -> String { "\(answer.status) \(answer.reason ?? "-")" }
        #expect(result(manage(rules, "POST", Self.channels, body: Self.createBody, authorization: nil)) == "403 MissingProviderToken")
        #expect(result(manage(rules, "POST", Self.channels, body: Self.createBody, authorization: "not.a.jwt")) == "403 InvalidProviderToken")
        #expect(result(manage(rules, "POST", "/1/apps/\(APNsHarness.topic)/channel", body: Self.createBody, authorization: token)) == "404 BadPath")
        #expect(result(manage(rules, "PUT", Self.channels, body: Self.createBody, authorization: token)) == "405 MethodNotAllowed")
        #expect(result(manage(rules, "POST", "/1/apps/\(APNsHarness.topic)/all-channels", authorization: token)) == "405 MethodNotAllowed")
        #expect(result(manage(rules, "POST", "/1/apps/com.other/channels", body: Self.createBody, authorization: token)) == "400 TopicDisallowed")
        #expect(result(manage(rules, "POST", Self.channels, body: "not json", authorization: token)) == "400 BadPayload")
        #expect(result(manage(rules, "POST", Self.channels, body: #"{"message-storage-policy":0}"#, authorization: token)) == "400 MissingPushType")
        #expect(
            result(manage(rules, "POST", Self.channels, body: #"{"message-storage-policy":0,"push-type":"alert"}"#, authorization: token))
                == "400 InvalidPushType")
        #expect(
            result(manage(rules, "POST", Self.channels, body: #"{"message-storage-policy":2,"push-type":"LiveActivity"}"#, authorization: token))
                == "400 BadMessageStoragePolicy")
        #expect(result(manage(rules, "GET", Self.channels, authorization: token)) == "400 MissingChannelId")
        #expect(result(manage(rules, "DELETE", Self.channels, [("apns-channel-id", "not base64!")], authorization: token)) == "400 BadChannelId")
        #expect(result(manage(rules, "GET", Self.channels, [("apns-channel-id", "x"), ("apns-channel-id", "y")], authorization: token)) == "400 DuplicateHeaders")
        #expect(result(manage(rules, "GET", Self.channels, [("apns-channel-id", "AAAA"), ("apns-request-id", "12")], authorization: token)) == "400 BadMessageId")
        #expect(manage(rules, "POST", Self.channels, body: Self.createBody, authorization: token).status == 201)
        #expect(result(manage(rules, "POST", Self.channels, body: Self.createBody, authorization: token)) == "400 CannotCreateChannelConfig")
        // The limit is per environment.
        #expect(manage(rules, "POST", Self.channels, body: Self.createBody, authorization: token, environment: .sandbox).status == 201)
        #expect(rules.rules.recorder.violations.count == 15)
        #expect(rules.managementRequestCount(in: .production) == 16)
    }

    @Test func broadcastsAreAcceptedAndRecorded() throws {
        let rules = rules()
        let token = try jwt()
        let channel = rules.createChannel(bundleID: APNsHarness.topic, environment: .production, messageStoragePolicy: 1)
        let requestID = "0a3c3f4e-2d5b-4c6a-9e8f-1b2c3d4e5f60"
        let answer = broadcast(
            rules,
            [("apns-channel-id", channel.id), ("apns-push-type", "LiveActivity"), ("apns-priority", "10"),
             ("apns-expiration", "1900000000"), ("apns-request-id", requestID)],
            authorization: token)
        #expect(answer.status == 200)
        #expect(Self.header(answer, "apns-request-id") == requestID)
        #expect(Self.header(answer, "apns-unique-id").flatMap { UUID(uuidString: $0) } != nil)
        let received = try #require(rules.broadcasts.accepted.first)
        #expect(received.channelID == channel.id)
        #expect(received.bundleID == APNsHarness.topic)
        #expect(received.payload == Self.update)
        #expect(received.headers["apns-priority"] == "10")
        #expect(received.headers["authorization"] == nil)
        // Apple's device pushes spell the push type in lower case; both spellings name it.
        #expect(broadcast(rules, [("apns-channel-id", channel.id), ("apns-push-type", "liveactivity")], authorization: token).status == 200)
        #expect(rules.broadcasts.acceptedCount == 2)
        #expect(rules.broadcastRequestCount(in: .production) == 2)
    }

    @Test func broadcastRefusals() throws {
        let rules = rules()
        let token = try jwt()
        let stored = rules.createChannel(bundleID: APNsHarness.topic, environment: .production, messageStoragePolicy: 0)
        let kept = rules.createChannel(bundleID: APNsHarness.topic, environment: .production, messageStoragePolicy: 1)
        func result(_ answer: APNsAnswer) -> String { "\(answer.status) \(answer.reason ?? "-")" }
        let base = [("apns-channel-id", kept.id), ("apns-push-type", "LiveActivity")]
        #expect(result(broadcast(rules, base, authorization: nil)) == "403 MissingProviderToken")
        #expect(result(broadcast(rules, base, method: "GET", authorization: token)) == "405 MethodNotAllowed")
        #expect(result(broadcast(rules, base, path: "/4/broadcasts/apps/", authorization: token)) == "404 BadPath")
        #expect(result(broadcast(rules, base, path: "/4/broadcasts/apps/com.other", authorization: token)) == "400 TopicDisallowed")
        #expect(result(broadcast(rules, [("apns-push-type", "LiveActivity")], authorization: token)) == "400 MissingChannelId")
        #expect(result(broadcast(rules, [("apns-channel-id", "%%%"), ("apns-push-type", "LiveActivity")], authorization: token)) == "400 BadChannelId")
        #expect(result(broadcast(rules, [("apns-channel-id", kept.id)], authorization: token)) == "400 MissingPushType")
        #expect(result(broadcast(rules, [("apns-channel-id", kept.id), ("apns-push-type", "alert")], authorization: token)) == "400 InvalidPushType")
        #expect(result(broadcast(rules, base + [("apns-priority", "7")], authorization: token)) == "400 BadPriority")
        #expect(result(broadcast(rules, base + [("apns-expiration", "soon")], authorization: token)) == "400 BadExpirationDate")
        #expect(result(broadcast(rules, base + [("apns-request-id", "not-a-uuid")], authorization: token)) == "400 BadMessageId")
        // A No Message Stored channel keeps nothing: only apns-expiration 0.
        #expect(
            result(broadcast(rules, [("apns-channel-id", stored.id), ("apns-push-type", "LiveActivity"), ("apns-expiration", "1900000000")], authorization: token))
                == "400 BadExpirationDate")
        #expect(
            broadcast(rules, [("apns-channel-id", stored.id), ("apns-push-type", "LiveActivity"), ("apns-expiration", "0")], authorization: token).status
                == 200)
        #expect(result(broadcast(rules, base, body: nil, authorization: token)) == "400 PayloadEmpty")
        let large = #"{"aps":{"event":"update","timestamp":1,"content-state":{}},"p":"\#(String(repeating: "x", count: 5200))"}"#
        #expect(result(broadcast(rules, base, body: large, authorization: token)) == "413 PayloadTooLarge")
        #expect(result(broadcast(rules, base, body: #"{"alert":"x"}"#, authorization: token)) == "400 BadPayload")
        let start = #"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","attributes":{}}}"#
        #expect(result(broadcast(rules, base, body: start, authorization: token)) == "400 BadPayload")
        #expect(result(broadcast(rules, base, body: #"{"aps":{"event":"update"}}"#, authorization: token)) == "400 BadPayload")
        #expect(rules.rules.recorder.violations.contains { $0.contains("cannot be started on a channel") })
        // A deleted channel, or one of the other environment, is unknown: not a broken rule.
        let violations = rules.rules.recorder.violations.count
        #expect(result(broadcast(rules, base, authorization: token, environment: .sandbox)) == "400 ChannelNotRegistered")
        rules.deleteChannel(id: kept.id)
        #expect(result(broadcast(rules, base, authorization: token)) == "400 ChannelNotRegistered")
        #expect(rules.rules.recorder.violations.count == violations)
        #expect(rules.broadcasts.acceptedCount == 1)
    }
}
