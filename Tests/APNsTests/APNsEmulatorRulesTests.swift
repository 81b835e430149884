import Crypto
import Foundation
import NIOCore
import NIOHPACK
import NotificationHub
import Testing

@testable import APNs
@testable import PushEmulator

/// The emulator's own checks, for requests the adapter never sends (so they cannot be reached end to end).
@Suite struct APNsEmulatorRulesTests {
    let clock = ManualWallClock()

    func rules(tokenMaximumAge: TimeInterval = 3600) -> APNsRequestRules {
        APNsRequestRules(
            configuration: APNsEmulatorConfiguration(
                teamID: APNsHarness.teamID, keyID: APNsHarness.keyID, publicKey: APNsHarness.signingKey.publicKey,
                topics: [APNsHarness.topic], tokenMaximumAge: tokenMaximumAge, clock: clock))
    }

    func jwt(teamID: String = APNsHarness.teamID, keyID: String = APNsHarness.keyID, key: P256.Signing.PrivateKey = APNsHarness.signingKey)
        throws -> String
    {
        try APNsProviderToken(privateKeyPEM: key.pemRepresentation, teamID: teamID, keyID: keyID, clock: clock).token()
    }

    func headers(_ extra: [(String, String)] = [], authorization: String?, topic: String? = APNsHarness.topic) -> HPACKHeaders {
        var headers = HPACKHeaders()
        if let authorization { headers.add(name: "authorization", value: "bearer " + authorization) }
        if let topic { headers.add(name: "apns-topic", value: topic) }
        for (name, value) in extra { headers.add(name: name, value: value) }
        return headers
    }

    func answer(
        _ rules: APNsRequestRules, method: String = "POST", path: String = "/3/device/" + APNsHarness.deviceToken(1),
        headers: HPACKHeaders, body: String? = #"{"aps":{"alert":"x"}}"#
    ) -> (Int, String?) {
        var state = APNsConnectionTokenState()
        let answer = rules.answer(method: method, path: path, headers: headers, body: body.map { ByteBuffer(string: $0) }, token: &state)
        return (answer.status, answer.reason)
    }

    @Test func requestShapeAndAuthentication() throws {
        let rules = rules()
        let token = try jwt()
        #expect(answer(rules, headers: headers(authorization: token)) == (200, nil))
        #expect(answer(rules, method: "GET", headers: headers(authorization: token)) == (405, "MethodNotAllowed"))
        #expect(answer(rules, path: "/3/devices/x", headers: headers(authorization: token)) == (404, "BadPath"))
        #expect(answer(rules, headers: headers([("apns-topic", "again")], authorization: token)) == (400, "DuplicateHeaders"))
        #expect(answer(rules, headers: headers(authorization: nil)) == (403, "MissingProviderToken"))
        #expect(answer(rules, headers: headers(authorization: "not.a.jwt")) == (403, "InvalidProviderToken"))
        #expect(answer(rules, headers: headers(authorization: try jwt(keyID: "OTHERKEY12"))) == (403, "InvalidProviderToken"))
        #expect(answer(rules, headers: headers(authorization: try jwt(key: P256.Signing.PrivateKey()))) == (403, "InvalidProviderToken"))
        #expect(answer(rules, path: "/3/device/", headers: headers(authorization: token)) == (400, "MissingDeviceToken"))
        #expect(answer(rules, path: "/3/device/abc", headers: headers(authorization: token)) == (400, "BadDeviceToken"))
        #expect(answer(rules, headers: headers(authorization: token, topic: nil)) == (400, "MissingTopic"))
        #expect(answer(rules, headers: headers(authorization: token, topic: "com.other")) == (400, "TopicDisallowed"))
        #expect(answer(rules, headers: headers([("apns-push-type", "voip")], authorization: token)) == (400, "BadTopic"))
        #expect(answer(rules, headers: headers([("apns-id", "123")], authorization: token)) == (400, "BadMessageId"))
        #expect(answer(rules, headers: headers(authorization: token), body: nil) == (400, "PayloadEmpty"))
        #expect(answer(rules, headers: headers(authorization: token), body: #"{"alert":"x"}"#) == (400, "BadPayload"))
        let large = #"{"aps":{},"p":"\#(String(repeating: "x", count: 4100))"}"#
        #expect(answer(rules, headers: headers(authorization: token), body: large) == (413, "PayloadTooLarge"))
        #expect(
            answer(rules, headers: headers([("apns-push-type", "voip")], authorization: token, topic: APNsHarness.topic + ".voip"), body: large)
                == (200, nil))
        #expect(
            answer(rules, headers: headers([("apns-push-type", "background"), ("apns-priority", "5")], authorization: token), body: #"{"aps":{"alert":"x"}}"#)
                == (400, "BadPayload"))
        #expect(rules.recorder.acceptedCount == 2)
        #expect(rules.recorder.violations.count == 17)
    }

    @Test func tokenAgeAndFutureTokens() throws {
        let rules = rules(tokenMaximumAge: 3600)
        let token = try jwt()
        clock.advance(by: 3601)
        #expect(answer(rules, headers: headers(authorization: token)) == (403, "ExpiredProviderToken"))
        let future = try APNsProviderToken(
            privateKeyPEM: APNsHarness.signingKey.pemRepresentation, teamID: APNsHarness.teamID, keyID: APNsHarness.keyID,
            clock: ManualWallClock(clock.now().addingTimeInterval(600))
        ).token()
        #expect(answer(rules, headers: headers(authorization: future)) == (403, "InvalidProviderToken"))
        rules.expireProviderTokens(issuedAtOrBefore: clock.now())
        #expect(answer(rules, headers: headers(authorization: try jwt())) == (403, "ExpiredProviderToken"))
    }
}
