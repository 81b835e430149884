import Crypto
import Foundation
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@testable import APNs

@Suite struct APNsDeliveryTests {
    @Test func theAdapterHooksCarryAPNsKnowledge() async throws {
        try await APNsHarness.with { (hub) async throws in
            #expect(try AdapterSet([hub.adapter]).telemetryName(for: .apns) == "Apns")
            // A template's own apns-expiration wins over its expiry; otherwise the expiry is carried.
            var explicit: NotificationHeaders = ["apns-expiration": "1900000000"]
            hub.adapter.applyTemplateExpiry("2030-01-01T00:00:00Z", to: &explicit)
            #expect(explicit[NotificationHeaders.expiry] == nil)
            var plain: NotificationHeaders = [:]
            hub.adapter.applyTemplateExpiry("2030-01-01T00:00:00Z", to: &plain)
            #expect(plain[NotificationHeaders.expiry] == "2030-01-01T00:00:00Z")
            let silent = hub.adapter.secureAnnouncements(for: SecureAnnouncementRequest(id: "s1"))
            #expect(silent.map(\.format) == [.apple] && silent[0].headers["apns-push-type"] == "background")
            let visible = hub.adapter.secureAnnouncements(for: SecureAnnouncementRequest(id: "s1", alertText: "New"))
            #expect(visible[0].headers["apns-push-type"] == "alert" && visible[0].body.contains(#""alert":"New""#))
        }
    }

    @Test func alertAndBackgroundSendsByTagReachTheEmulatorExactly() async throws {
        try await APNsHarness.with { (hub) async throws in
            let sports = [APNsHarness.deviceToken(1), APNsHarness.deviceToken(2)]
            let news = APNsHarness.deviceToken(3)
            try await hub.register("a", token: sports[0], tags: ["sports"])
            try await hub.register("b", token: sports[1].uppercased(), tags: ["sports"])
            try await hub.register("c", token: news, tags: ["news"])

            let alert = Notification(
                format: .apple, body: #"{"aps":{"alert":"Goal!"},"match":7}"#,
                headers: ["apns-collapse-id": "match-7", "apns-expiration": "1900000000"],
                audience: .tags(try TagExpression(parsing: "sports")))
            let summary = try await hub.dispatcher.dispatch(alert)
            #expect(summary.counts == [.apns: [.success: 2]])
            let received = hub.emulator.received
            #expect(received.count == 2)
            #expect(Set(received.map { $0.deviceToken.lowercased() }) == Set(sports))
            for notification in received {
                #expect(notification.payload == #"{"aps":{"alert":"Goal!"},"match":7}"#)
                #expect(notification.headers["apns-push-type"] == "alert")
                #expect(notification.headers["apns-topic"] == APNsHarness.topic)
                #expect(notification.headers["apns-priority"] == "10")
                #expect(notification.headers["apns-collapse-id"] == "match-7")
                #expect(notification.headers["apns-expiration"] == "1900000000")
                #expect(notification.headers["authorization"] == nil)
                #expect(notification.apnsID == APNsAdapter.apnsID(notificationID: alert.id, deviceToken: notification.deviceToken))
                #expect(notification.apnsID == notification.apnsID.lowercased(), "apns-id in the lowercase form Apple documents")
                let jwt = try APNsHarness.decodeJWT(notification.providerToken)
                #expect(jwt.header["alg"] == "ES256")
                #expect(jwt.header["kid"] == .string(APNsHarness.keyID))
                #expect(jwt.claims["iss"] == .string(APNsHarness.teamID))
                #expect(jwt.claims["iat"] != nil)
                let signature = try P256.Signing.ECDSASignature(rawRepresentation: jwt.signature)
                #expect(APNsHarness.signingKey.publicKey.isValidSignature(signature, for: jwt.signed))
            }
            // One token reused across requests.
            #expect(Set(received.map(\.providerToken)).count == 1)

            let background = Notification(
                format: .apple, body: #"{"aps":{"content-available":1},"sync":true}"#,
                audience: .tags(try TagExpression(parsing: "news")))
            let backgroundSummary = try await hub.dispatcher.dispatch(background)
            #expect(backgroundSummary.counts == [.apns: [.success: 1]])
            let last = try #require(hub.emulator.received.last)
            #expect(last.deviceToken == news)
            #expect(last.headers["apns-push-type"] == "background")
            #expect(last.headers["apns-priority"] == "5")
            #expect(hub.emulator.violations.isEmpty)
        }
    }

    @Test func pushTypesGetTheirTopicSuffixAndVoipItsLargerLimit() async throws {
        try await APNsHarness.with { (hub) async throws in
            let token = APNsHarness.deviceToken(9)
            let expectations = [
                ("voip", ".voip"), ("complication", ".complication"), ("fileprovider", ".pushkit.fileprovider"),
                ("liveactivity", ".push-type.liveactivity"), ("location", ".location-query"), ("pushtotalk", ".voip-ptt"),
            ]
            for (pushType, suffix) in expectations {
                // A liveactivity push carries a Live Activity payload (the emulator checks ActivityKit's rules).
                let body =
                    pushType == "liveactivity"
                    ? #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{}}}"# : #"{"aps":{"alert":"hi"}}"#
                let summary = try await hub.sendDirect(body, headers: ["apns-push-type": pushType], to: [token])
                #expect(summary.count(of: .success) == 1)
                #expect(hub.emulator.received.last?.headers["apns-topic"] == APNsHarness.topic + suffix)
                #expect(hub.emulator.received.last?.headers["apns-push-type"] == pushType)
            }
            let padding = String(repeating: "x", count: 4600)
            let large = #"{"aps":{"alert":"call"},"p":"\#(padding)"}"#
            #expect(try await hub.sendDirect(large, headers: ["apns-push-type": "voip"], to: [token]).count(of: .success) == 1)
            #expect(try await hub.sendDirect(large, to: [token]).count(of: .invalidNotificationSize) == 1)
            #expect(throws: HubError.self) {
                try hub.adapter.validate(notification: Notification(format: .apple, body: large, audience: .all))
            }
            try hub.adapter.validate(
                notification: Notification(format: .apple, body: large, headers: ["apns-push-type": "voip"], audience: .all))
            let huge = #"{"aps":{"alert":"call"},"p":"\#(String(repeating: "x", count: 5200))"}"#
            #expect(throws: HubError.self) {
                try hub.adapter.validate(
                    notification: Notification(format: .apple, body: huge, headers: ["apns-push-type": "voip"], audience: .all))
            }
        }
    }

    @Test func aTemplateExpiryBecomesApnsExpiration() async throws {
        try await APNsHarness.with { (hub) async throws in
            let token = APNsHarness.deviceToken(5)
            #expect(
                try await hub.sendDirect(headers: ["ServiceBusNotification-Expiry": "2030-01-01T00:00:00Z"], to: [token])
                    .count(of: .success) == 1)
            #expect(hub.emulator.received.last?.headers["apns-expiration"] == "1893456000")
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            #expect(hub.emulator.received.last?.headers["apns-expiration"] == nil)
        }
    }

    @Test func aSecondAppIsChosenWithApnsTopic() async throws {
        try await APNsHarness.with { (hub) async throws in
            let token = APNsHarness.deviceToken(4)
            #expect(try await hub.sendDirect(headers: ["apns-topic": "com.example.second"], to: [token]).count(of: .success) == 1)
            #expect(hub.emulator.received.last?.headers["apns-topic"] == "com.example.second")
            #expect(
                try await hub.sendDirect(headers: ["apns-topic": "com.example.second", "apns-push-type": "voip"], to: [token])
                    .count(of: .success) == 1)
            #expect(hub.emulator.received.last?.headers["apns-topic"] == "com.example.second.voip")
            // A topic the hub does not serve never leaves the hub.
            #expect(try await hub.sendDirect(headers: ["apns-topic": "com.other.app"], to: [token]).count(of: .invalidNotificationFormat) == 1)
            #expect(throws: HubError.self) {
                try hub.adapter.validate(
                    notification: Notification(format: .apple, body: #"{"aps":{}}"#, headers: ["apns-topic": "com.other.app"], audience: .all))
            }
        }
    }

    @Test func unregisteredTokensArePrunedThroughTheStore() async throws {
        try await APNsHarness.with { (hub) async throws in
            let gone = APNsHarness.deviceToken(20)
            let updatedLater = APNsHarness.deviceToken(21)
            let fine = APNsHarness.deviceToken(22)
            try await hub.register("gone", token: gone, tags: ["t"])
            try await hub.register("later", token: updatedLater, tags: ["t"])
            try await hub.register("fine", token: fine, tags: ["t"])
            hub.emulator.setDevice(gone, .unregistered(Date().addingTimeInterval(60)))
            // APNs says the token stopped being valid before the installation was last updated: keep it.
            hub.emulator.setDevice(updatedLater, .expired(Date(timeIntervalSince1970: 1_600_000_000)))

            // Expired channels are applied as the delivery worker would.
            let summary = try await hub.dispatcher.dispatch(
                Notification(format: .apple, body: #"{"aps":{"alert":"x"}}"#, audience: .tags(try TagExpression(parsing: "t")))
            ) { try await hub.store.apply($0.expiredChannels) }
            #expect(summary.counts == [.apns: [.success: 1, .expiredChannel: 2]])
            #expect(try await hub.store.installation(id: "gone")?.expiredPushChannel == true)
            #expect(try await hub.store.installation(id: "later")?.expiredPushChannel == false)
            #expect(try await hub.store.installation(id: "fine")?.expiredPushChannel == false)

            // Expired installations are not targeted again.
            let again = try await hub.dispatcher.dispatch(
                Notification(format: .apple, body: #"{"aps":{"alert":"y"}}"#, audience: .tags(try TagExpression(parsing: "t"))))
            #expect(again.count(of: .expiredChannel) == 1)
            #expect(again.count(of: .success) == 1)
        }
    }

    @Test func retryableAnswersAreRetriedAndRetryAfterIsHonoured() async throws {
        let patient = DeliveryConfiguration(
            pageSize: 100, batchSize: 50, concurrency: 2, abandonAfterSeconds: 10, maximumAttempts: 4,
            initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.02)
        try await APNsHarness.with(delivery: patient) { (hub) async throws in
            let token = APNsHarness.deviceToken(30)
            hub.emulator.faults = FaultInjection(retryAfterSeconds: 0)
            hub.emulator.setDevice(token, .reply(status: 503, reason: "ServiceUnavailable"), times: 1)
            #expect(try await hub.sendDirect(to: [token]).counts == [.apns: [.success: 1]])
            hub.emulator.setDevice(token, .reply(status: 429, reason: "TooManyRequests"), times: 2)
            #expect(try await hub.sendDirect(to: [token]).counts == [.apns: [.success: 1]])
            hub.emulator.setDevice(token, .reply(status: 500, reason: "InternalServerError"), times: 1)
            #expect(try await hub.sendDirect(to: [token]).counts == [.apns: [.success: 1]])
            #expect(hub.emulator.acceptedCount == 3)

            // Retry-After of 30 s does not fit in the 10 s abandon window: the dispatcher gives up instead of
            // retrying early, which proves the adapter passed Retry-After on.
            hub.emulator.faults = FaultInjection(retryAfterSeconds: 30)
            hub.emulator.setDevice(token, .reply(status: 429, reason: "TooManyRequests"), times: 1)
            #expect(try await hub.sendDirect(to: [token]).counts == [.apns: [.abandoned: 1]])
            hub.emulator.setDevice(token, .reply(status: 503, reason: "ServiceUnavailable"), times: 1)
            #expect(try await hub.sendDirect(to: [token]).counts == [.apns: [.abandoned: 1]])
            #expect(hub.emulator.acceptedCount == 3)
        }
    }

    @Test func retryAfterParsing() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(APNsOutcomeMapping.parseRetryAfter("7", now: now) == .seconds(7))
        #expect(APNsOutcomeMapping.parseRetryAfter("Tue, 14 Nov 2023 22:15:20 GMT", now: now) == .seconds(120))
        #expect(APNsOutcomeMapping.parseRetryAfter("soon", now: now) == nil)
        let throttled = APNsOutcomeMapping.result(status: 429, reason: "TooManyRequests", retryAfter: "3")
        #expect(throttled.outcome == .throttled && throttled.retryAfter == .seconds(3))
    }

    @Test func aRetryReusesTheApnsID() async throws {
        try await APNsHarness.with { (hub) async throws in
            let token = APNsHarness.deviceToken(31)
            hub.emulator.faults = FaultInjection(retryAfterSeconds: 0)
            hub.emulator.setDevice(token, .reply(status: 500, reason: "InternalServerError"), times: 1)
            let notification = Notification(
                format: .apple, body: #"{"aps":{"alert":"x"}}"#, audience: .handles(.apns, [.handle(token)]))
            #expect(try await hub.dispatcher.dispatch(notification).count(of: .success) == 1)
            #expect(hub.emulator.received.last?.apnsID == APNsAdapter.apnsID(notificationID: notification.id, deviceToken: token))
            #expect(APNsAdapter.apnsID(notificationID: "n1", deviceToken: token) == APNsAdapter.apnsID(notificationID: "n1", deviceToken: token))
            #expect(APNsAdapter.apnsID(notificationID: "n1", deviceToken: token) != APNsAdapter.apnsID(notificationID: "n2", deviceToken: token))
        }
    }
}
