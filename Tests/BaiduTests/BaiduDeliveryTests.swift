import Baidu
import Crypto
import Foundation
import HubTestSupport
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@Suite struct BaiduDeliveryTests {
    static let notification = #"{"title":"Hello","description":"From the hub","custom_content":{"k":"v"}}"#
    static let asNotification: NotificationHeaders = ["X-Baidu-Message-Type": "1"]

    @Test func nativeNotificationsReachEveryDeviceOneSignedRequestEach() async throws {
        try await BaiduHarness.with { hub in
            for index in 0..<12 {
                _ = try await hub.store.upsert(BaiduHarness.installation("d\(index)", number: index, tags: index < 9 ? ["news"] : []))
            }
            let summary = try await hub.send(.baidu, Self.notification, headers: Self.asNotification, to: .tags(.tag("news")))
            #expect(summary.counts == [.baidu: [.success: 9]])
            let received = hub.emulator.recorder.accepted
            #expect(Set(received.map(\.channelID)) == Set((0..<9).map { BaiduHarness.channelID($0) }))
            #expect(received.allSatisfy { $0.messageType == 1 && $0.message == Self.notification && !$0.batch && $0.deployStatus == nil })
            #expect(hub.emulator.sendRequestCount == 9)
            #expect(hub.emulator.recorder.violations.isEmpty)
        }
    }

    @Test func withoutAMessageTypeHeaderTheMessageIsPassThrough() async throws {
        try await BaiduHarness.with { hub in
            #expect(await hub.deliver(#"{"anything":"the app reads"}"#, to: [BaiduHarness.handle(1)]) == [.success])
            #expect(hub.emulator.recorder.accepted.first?.messageType == 0)
        }
    }

    @Test func templateSendsRenderPerInstallationWithTheirMessageType() async throws {
        try await BaiduHarness.with { hub in
            let template = InstallationTemplate(
                body: #"{"title":"$(title)","description":"For $(name)"}"#, headers: ["X-Baidu-Message-Type": "1"])
            _ = try await hub.store.upsert(BaiduHarness.installation("a", number: 1, templates: ["t": template]))
            let summary = try await hub.send(.template, #"{"title":"Hello","name":"Ann"}"#)
            #expect(summary.counts == [.baidu: [.success: 1]])
            let received = try #require(hub.emulator.recorder.accepted.first)
            #expect(received.message == #"{"title":"Hello","description":"For Ann"}"# && received.messageType == 1)
        }
    }

    @Test func anUnboundChannelExpiresItsInstallation() async throws {
        try await BaiduHarness.with { hub in
            _ = try await hub.store.upsert(BaiduHarness.installation("ok", number: 1))
            _ = try await hub.store.upsert(BaiduHarness.installation("gone", number: 2))
            _ = try await hub.store.upsert(BaiduHarness.installation("stale", number: 3))
            hub.emulator.markUnbound([BaiduHarness.channelID(2)])
            hub.emulator.markExpired([BaiduHarness.channelID(3)])
            let summary = try await hub.send(.baidu, Self.notification, headers: Self.asNotification)
            #expect(summary.counts == [.baidu: [.success: 1, .expiredChannel: 2]])
            #expect(try await hub.store.installation(id: "gone")?.expiredPushChannel == true)
            #expect(try await hub.store.installation(id: "stale")?.expiredPushChannel == true)
            #expect(try await hub.store.installation(id: "ok")?.expiredPushChannel == false)
            #expect(hub.emulator.recorder.accepted.map(\.channelID) == [BaiduHarness.channelID(1)])
        }
    }

    @Test func unknownChannelsAreRefusedWhenTheEmulatorKnowsOnlyRegisteredOnes() async throws {
        try await BaiduHarness.with(acceptsUnknownChannels: false) { hub in
            hub.emulator.register([BaiduHarness.channelID(1)])
            let results = await hub.deliver(Self.notification, headers: Self.asNotification, to: [BaiduHarness.handle(1), BaiduHarness.handle(2)])
            #expect(results.map(\.outcome) == [.success, .expiredChannel])
            #expect(results.last?.reason == "30608")
        }
    }

    @Test func malformedChannelsAreRefusedWithoutARequest() async throws {
        try await BaiduHarness.with { hub in
            let results = await hub.deliver(Self.notification, to: ["3748092266370017686", "user-chan", "-123", "u1-12a"])
            #expect(results.allSatisfy { $0 == DeliveryResult(.badChannel, reason: "InvalidChannel") })
            #expect(hub.emulator.sendRequestCount == 0)
        }
    }

    @Test func batchesGoThroughBatchDeviceForAnAndroidApp() async throws {
        try await BaiduHarness.with(batchSize: 5) { hub in
            for index in 0..<12 { _ = try await hub.store.upsert(BaiduHarness.installation("b\(index)", number: index)) }
            let summary = try await hub.send(.baidu, Self.notification, headers: Self.asNotification)
            #expect(summary.counts == [.baidu: [.success: 12]])
            // 12 channels, 5 per request: three batch_device requests.
            #expect(hub.emulator.batchRequestCount == 3)
            let received = hub.emulator.recorder.accepted
            #expect(received.count == 12 && received.allSatisfy { $0.batch && $0.topicID == "notificationhub" && $0.messageType == 1 })
            #expect(hub.emulator.recorder.violations.isEmpty)
        }
    }

    @Test func anIOSAppSendsEachDeviceItsOwnRequestWithItsDeployStatus() async throws {
        try await BaiduHarness.with(deviceType: .ios, batchSize: 100) { hub in
            let body = #"{"aps":{"alert":"Hello"},"k":"v"}"#
            let results = await hub.deliver(body, headers: Self.asNotification, to: [BaiduHarness.handle(1), BaiduHarness.handle(2)])
            #expect(results == [.success, .success])
            #expect(hub.emulator.batchRequestCount == 0)
            #expect(hub.emulator.recorder.accepted.allSatisfy { $0.deployStatus == 2 && !$0.batch })
            let refused = await hub.deliver(Self.notification, headers: Self.asNotification, to: [BaiduHarness.handle(3)])
            #expect(refused == [DeliveryResult(.invalidNotificationFormat, reason: "30602")])
        }
    }

    @Test func aWrongSecretKeyEndsAsInvalidCredentialsAndIsNeverLogged() async throws {
        let logs = CapturedLogs()
        try await BaiduHarness.with { hub in
            let secret = "wrong-secret-that-must-not-leak"
            let adapter = try BaiduAdapter(settings: hub.settings(secret: secret), logger: logs.logger())
            let results = await hub.deliver(Self.notification, to: [BaiduHarness.handle(1)], with: adapter, logger: logs.logger())
            #expect(results == [DeliveryResult(.invalidCredentials, reason: "30603")])
            #expect(hub.emulator.recorder.acceptedCount == 0)
            #expect(hub.emulator.recorder.violations == ["sign does not match the request"])
            try await adapter.shutdown()
            #expect(logs.text.contains("30603"))
            #expect(!logs.text.contains(secret) && !logs.text.contains(BaiduHarness.secret))
        }
    }

    @Test func throttlingHonoursRetryAfterAndServerErrorsAreRetryable() async throws {
        try await BaiduHarness.with { hub in
            let handle = BaiduHarness.handle(1)
            hub.emulator.setFaults(FaultInjection(throttleRate: 1, retryAfterSeconds: 7))
            #expect(await hub.deliver(Self.notification, to: [handle]) == [DeliveryResult(.throttled, reason: "30699", retryAfter: .seconds(7))])
            hub.emulator.setFaults(FaultInjection(throttleRate: 1, retryAfterSeconds: 0))
            #expect(await hub.deliver(Self.notification, to: [handle]) == [DeliveryResult(.throttled, reason: "30699", retryAfter: BaiduAdapter.throttleBackoff)])
            hub.emulator.setFaults(FaultInjection(serverErrorRate: 1))
            #expect(await hub.deliver(Self.notification, to: [handle]) == [DeliveryResult(.pnsUnavailable, reason: "30600")])
            hub.emulator.setFaults(FaultInjection(unavailableRate: 1, retryAfterSeconds: 3))
            #expect(await hub.deliver(Self.notification, to: [handle]) == [DeliveryResult(.pnsUnavailable, reason: "30600", retryAfter: .seconds(3))])
            hub.emulator.setFaults(FaultInjection(dropConnectionRate: 1))
            #expect(await hub.deliver(Self.notification, to: [handle]).map(\.outcome) == [.pnsUnreachable])
            hub.emulator.setFaults(.none)
            #expect(await hub.deliver(Self.notification, to: [handle]) == [.success])
        }
    }

    @Test func theDispatcherRetriesThrottledDeliveriesUntilTheyPass() async throws {
        try await BaiduHarness.with { hub in
            _ = try await hub.store.upsert(BaiduHarness.installation("t", number: 1))
            hub.emulator.setFaults(FaultInjection(throttleRate: 1, retryAfterSeconds: 1))
            let throttled = try await hub.send(.baidu, Self.notification)
            #expect(throttled.counts == [.baidu: [.throttled: 1]])
            // Three attempts, each one request: retried, never lost.
            #expect(hub.emulator.recorder.acceptedCount == 0)
            hub.emulator.setFaults(.none)
            let passed = try await hub.send(.baidu, Self.notification)
            #expect(passed.counts == [.baidu: [.success: 1]])
        }
    }

    @Test func renderedPayloadsBaiduWouldRefuseAreNeverSent() async throws {
        try await BaiduHarness.with { hub in
            let handle = BaiduHarness.handle(1)
            let large = #"{"x":""# + String(repeating: "y", count: 4100) + #""}"#
            let results = await hub.deliver(#"{"title":"no description"}"#, headers: Self.asNotification, to: [handle])
                + (await hub.deliver(#"{"description":"d"}"#, headers: ["X-Baidu-Message-Type": "2"], to: [handle]))
                + (await hub.deliver("not json", to: [handle]))
                + (await hub.deliver(large, to: [handle]))
            #expect(results.map(\.outcome) == [.invalidNotificationFormat, .invalidNotificationFormat, .invalidNotificationFormat, .invalidNotificationSize])
            #expect(results.allSatisfy { $0.reason == "30602" })
            #expect(hub.emulator.sendRequestCount == 0)
        }
    }

    @Test func secureAnnouncementsCarryOnlyTheID() async throws {
        try await BaiduHarness.with { hub in
            let silent = try #require(BaiduAdapter.announcements(for: SecureAnnouncementRequest(id: "s1"), deviceType: .android).first)
            #expect(silent.format == .baidu)
            #expect(await hub.deliver(silent.body, headers: silent.headers, to: [BaiduHarness.handle(1)]) == [.success])
            let first = try #require(hub.emulator.recorder.accepted.first)
            #expect(first.messageType == 0 && first.message == #"{"secureId":"s1"}"#)
            let visible = try #require(hub.adapter.secureAnnouncements(for: SecureAnnouncementRequest(id: "s2", alertText: "New")).first)
            #expect(await hub.deliver(visible.body, headers: visible.headers, to: [BaiduHarness.handle(2)]) == [.success])
            let last = try #require(hub.emulator.recorder.accepted.last)
            #expect(last.messageType == 1)
            let object = try #require(try JSONValue(parsing: Array(last.message.utf8)).objectValue)
            #expect(object["description"]?.stringValue == "New" && object["custom_content"]?.objectValue?["secureId"]?.stringValue == "s2")
            let ios = try #require(BaiduAdapter.announcements(for: SecureAnnouncementRequest(id: "s3"), deviceType: .ios).first)
            #expect(ios.headers["X-Baidu-Message-Type"] == "1" && ios.body.contains(#""content-available":1"#) && ios.body.contains("s3"))
        }
    }

    @Test func announcementsPassTheSendTimeChecks() async throws {
        try await BaiduHarness.with { hub in
            let announcements = hub.adapter.secureAnnouncements(for: SecureAnnouncementRequest(id: "abc"))
            #expect(announcements.count == 1)
            try hub.adapter.validate(
                notification: NotificationContent(format: .baidu, body: ByteBuffer(string: announcements[0].body), headers: announcements[0].headers))
        }
    }

    @Test func theSendsExpiryBecomesMsgExpiresWithinEachMethodsRange() async throws {
        try await BaiduHarness.with(batchSize: 10) { hub in
            let now = Date()
            let inAnHour = Date.ISO8601FormatStyle().format(now.addingTimeInterval(3600))
            #expect(await hub.deliver(Self.notification, headers: ["ServiceBusNotification-Expiry": inAnHour], to: [BaiduHarness.handle(1)]) == [.success])
            let hour = try #require(hub.emulator.recorder.accepted.last?.messageExpires)
            #expect((3500...3600).contains(hour))
            // Far ahead (Unix seconds): a single push keeps at most 7 days, a batch at most one.
            let far: NotificationHeaders = ["ServiceBusNotification-Expiry": "99999999999"]
            #expect(await hub.deliver(Self.notification, headers: far, to: [BaiduHarness.handle(2)]) == [.success])
            #expect(hub.emulator.recorder.accepted.last?.messageExpires == 604_800)
            #expect(await hub.deliver(Self.notification, headers: far, to: [BaiduHarness.handle(3), BaiduHarness.handle(4)]) == [.success, .success])
            #expect(hub.emulator.recorder.accepted.last?.messageExpires == 86_400 && hub.emulator.recorder.accepted.last?.batch == true)
            // Without one, Baidu's default applies.
            #expect(await hub.deliver(Self.notification, to: [BaiduHarness.handle(5)]) == [.success])
            #expect(hub.emulator.recorder.accepted.last?.messageExpires == nil)
            let bad = await hub.deliver(Self.notification, headers: ["ServiceBusNotification-Expiry": "tomorrow"], to: [BaiduHarness.handle(6)])
            #expect(bad == [DeliveryResult(.invalidNotificationFormat, reason: "30602")])
        }
    }

    @Test func secureNotificationsAnnounceOnlyTheirIdWithTheirLifetime() async throws {
        try await BaiduHarness.with { harness in
            _ = try await harness.store.upsert(BaiduHarness.installation("alice-phone", number: 8, tags: ["username:alice"]))
            let hub = Hub(
                configuration: HubConfiguration(
                    name: "demo", delivery: BaiduHarness.fast, adapters: try AdapterSet([harness.adapter]),
                    securePush: SecurePushConfiguration(encryptionKey: SymmetricKey(size: .bits256))),
                installations: harness.store, notifications: SQLNotificationStore(database: harness.store.database),
                secureNotifications: SQLSecureNotificationStore(database: harness.store.database),
                logger: BaiduHarness.logger)
            let sent = try await hub.securePush.createSecureNotification(
                payload: Data(#"{"iban":"CH93-SECRET"}"#.utf8), audience: .tag("username:alice"), timeToLiveSeconds: 300,
                readOnce: false)
            #expect(sent.notificationIDs.count == 1)
            let record = try #require(try await hub.sends.record(id: sent.notificationIDs[0]))
            #expect(record.notification.format == .baidu)
            let summary = try await hub.dispatcher.dispatch(record.notification)
            #expect(summary.counts == [.baidu: [.success: 1]])
            let message = try #require(harness.emulator.recorder.accepted.first)
            #expect(message.channelID == BaiduHarness.channelID(8) && message.messageType == 0)
            #expect(message.message == #"{"secureId":"\#(sent.id)"}"#)
            #expect((290...300).contains(message.messageExpires ?? 0), "msg_expires is the secure notification's lifetime")
        }
    }
}
