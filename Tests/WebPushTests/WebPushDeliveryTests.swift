import Crypto
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Testing
import WebPush

/// Native, template, direct, batch-direct and secure sends reach browsers: every message decrypted by the emulator
/// with the subscription's private key, VAPID checked.
@Suite struct WebPushDeliveryTests {
    @Test func aNativeSendReachesEveryBrowserEncryptedAndSigned() async throws {
        try await WebPushHarness.with { hub in
            var subscriptions: [String: String] = [:]
            for index in 0..<30 {
                let subscription = try await hub.register("b\(index)", tags: ["news"])
                subscriptions[subscription.id] = "b\(index)"
            }
            let body = #"{"title":"Breaking","body":"Web Push works"}"#
            let summary = try await hub.send(
                body, headers: ["Urgency": "high", "Topic": "breaking-1"], to: .tags(.tag("news")))
            #expect(summary.counts == [.browser: [.success: 30]])
            let received = hub.emulator.recorder.accepted
            #expect(received.count == 30)
            #expect(Set(received.map(\.subscriptionID)) == Set(subscriptions.keys))
            for message in received {
                #expect(message.text == body)
                #expect(message.urgency == "high")
                #expect(message.topic == "breaking-1")
                #expect(message.timeToLive == WebPushHeaders.maximumTimeToLive, "TTL is always sent")
                #expect(message.subject == WebPushHarness.subject)
                #expect(message.expiresAt > Date() && message.expiresAt <= Date() + 86_400)
                #expect(message.encryptedBytes == body.utf8.count + WebPushEncryption.overheadBytes)
            }
            #expect(hub.emulator.recorder.violations.isEmpty)
            // One VAPID token for the push service's origin, reused for every message.
            #expect(await hub.adapter.vapidTokenCount == 1)
        }
    }

    @Test func theSendsTTLOrItsExpiryBecomesTheTTL() async throws {
        try await WebPushHarness.with { hub in
            let subscription = try await hub.register("b1")
            #expect(await hub.deliver("a", to: subscription.pushChannel, headers: ["TTL": "60"]) == .success)
            let expiry = HubDateFormat.string(from: Date() + 3600)
            #expect(await hub.deliver("b", to: subscription.pushChannel, headers: ["ServiceBusNotification-Expiry": expiry]) == .success)
            let ttls = hub.emulator.recorder.accepted.map(\.timeToLive)
            #expect(ttls.count == 2)
            #expect(ttls[0] == 60)
            #expect((3590...3600).contains(ttls[1]))
        }
    }

    @Test func templateSendsRenderEachInstallationsTemplateAndItsExpiry() async throws {
        try await WebPushHarness.with { hub in
            let expiry = HubDateFormat.string(from: Date() + 600)
            try await hub.register(
                "b1",
                templates: [
                    "score": InstallationTemplate(
                        body: #"{"title":"$(home) $(score) $(away)"}"#, headers: ["Urgency": "$(urgency)"], expiry: expiry)
                ])
            try await hub.register("b2", templates: ["score": InstallationTemplate(body: #"{"t":"$(score)"}"#)])
            let summary = try await hub.send(
                #"{"home":"Basel","away":"Bern","score":"2-1","urgency":"low"}"#, format: .template)
            #expect(summary.counts == [.browser: [.success: 2]])
            let texts = Set(hub.emulator.recorder.accepted.map(\.text))
            #expect(texts == [#"{"title":"Basel 2-1 Bern"}"#, #"{"t":"2-1"}"#])
            let first = try #require(hub.emulator.recorder.accepted.first { $0.text.contains("Basel") })
            #expect(first.urgency == "low")
            #expect((590...600).contains(first.timeToLive), "the template's expiry is carried as TTL")
        }
    }

    @Test func directAndBatchDirectSendsReachBrowsers() async throws {
        try await WebPushHarness.with { hub in
            let subscriptions = (0..<4).map { _ in hub.emulator.createSubscription() }
            // Batch direct: the handles are the subscriptions' JSON.
            let summary = try await hub.send(
                "batch", to: .handles(.browser, subscriptions.map { .handle($0.json) }))
            #expect(summary.counts == [.browser: [.success: 4]])
            // Direct as Azure's SDKs send it: the endpoint as the handle, the keys in P256DH and Auth.
            let one = subscriptions[0]
            let direct = try await hub.send(
                "direct", headers: ["P256DH": one.p256dh, "Auth": one.auth], to: .handles(.browser, [.handle(one.endpoint)]))
            #expect(direct.counts == [.browser: [.success: 1]])
            #expect(hub.emulator.recorder.accepted.filter { $0.subscriptionID == one.id }.map(\.text) == ["batch", "direct"])
            #expect(hub.emulator.recorder.violations.isEmpty)
        }
    }

    @Test func secureNotificationsAnnounceOnlyTheirIdToBrowsers() async throws {
        try await WebPushHarness.with { harness in
            let subscription = try await harness.register("alice-browser", tags: ["username:alice"])
            let securePush = SecurePushConfiguration(encryptionKey: SymmetricKey(size: .bits256))
            let hub = Hub(
                configuration: HubConfiguration(
                    name: "demo", delivery: WebPushHarness.fast, adapters: try AdapterSet([harness.adapter]),
                    securePush: securePush),
                installations: harness.store, notifications: SQLNotificationStore(database: harness.store.database),
                secureNotifications: SQLSecureNotificationStore(database: harness.store.database),
                logger: WebPushHarness.logger)
            let secret = #"{"iban":"CH93-SECRET"}"#
            let sent = try await hub.securePush.createSecureNotification(
                payload: Data(secret.utf8), audience: .tag("username:alice"), timeToLiveSeconds: 300, readOnce: false)
            #expect(sent.notificationIDs.count == 1, "one id-only send in the browser format")
            let record = try #require(try await hub.sends.record(id: sent.notificationIDs[0]))
            #expect(record.notification.format == .browser)
            let summary = try await hub.dispatcher.dispatch(record.notification)
            #expect(summary.counts == [.browser: [.success: 1]])
            let message = try #require(harness.emulator.recorder.accepted.first)
            #expect(message.subscriptionID == subscription.id)
            #expect(message.text == #"{"secureId":"\#(sent.id)"}"#)
            #expect(!message.text.contains("CH93"))
            #expect((290...300).contains(message.timeToLive), "the TTL is the secure notification's lifetime")
        }
    }

    @Test func vapidTokensAreSignedPerPushServiceOrigin() async throws {
        try await WebPushHarness.with { hub in
            let subscription = try await hub.register("b1")
            for _ in 0..<5 { #expect(await hub.deliver("x", to: subscription.pushChannel) == .success) }
            #expect(await hub.adapter.vapidTokenCount == 1)
            // A token near its end is replaced: with a clock a day ahead the cached token is stale.
            let clock = ManualWallClock(Date())
            let adapter = try hub.makeAdapter(clock: clock)
            #expect(await hub.deliver("y", to: subscription.pushChannel, with: adapter) == .success)
            clock.advance(by: 11 * 3600 + 1)
            #expect(await hub.deliver("z", to: subscription.pushChannel, with: adapter) == .success)
            #expect(await adapter.vapidTokenCount == 2)
            try await adapter.shutdown()
        }
    }

    @Test func secretsAndPayloadsAreNeverLogged() async throws {
        try await WebPushHarness.with { hub in
            let logs = CapturedLogs()
            let adapter = try hub.makeAdapter(logger: logs.logger("webpush"))
            let subscription = hub.emulator.createSubscription()
            hub.emulator.script(subscription.id, [.init(status: 401), .init(status: 401)])
            let payload = "payload-7f3a9c"
            let logger = logs.logger("webpush-call")
            #expect(
                await hub.deliver(payload, to: subscription.pushChannel, with: adapter, logger: logger).outcome
                    == .invalidCredentials)
            #expect(await hub.deliver(payload, to: subscription.pushChannel, with: adapter, logger: logger) == .success)
            let text = logs.text
            #expect(!text.isEmpty)
            for secret in [
                payload, subscription.auth, subscription.p256dh, subscription.id, WebPushHarness.keys.privateKeyBase64URL,
                "vapid t=",
            ] {
                #expect(!text.contains(secret), "\(secret) must not be logged")
            }
            try await adapter.shutdown()
        }
    }
}
