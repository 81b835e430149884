import Crypto
import Foundation
import HubTestSupport
import NIOCore
import NotificationHub
import PushEmulator
import Testing
import Xiaomi

@Suite struct XiaomiDeliveryTests {
    static let notification = #"{"title":"Hello","description":"News for you","payload":"{\"id\":7}","notify_type":-1,"extra":{"notify_effect":"1"}}"#

    @Test func nativeSendsGoOutInBatchesOfRegistrationIds() async throws {
        try await XiaomiHarness.with(batchSize: 7) { hub in
            for index in 0..<20 {
                _ = try await hub.store.upsert(XiaomiHarness.installation("d\(index)", tags: index < 16 ? ["news"] : []))
            }
            let summary = try await hub.send(.xiaomi, Self.notification, to: .tags(.tag("news")))
            #expect(summary.counts == [.xiaomi: [.success: 16]])
            let received = hub.emulator.recorder.accepted
            // Ids holding "/", "+" and "=" arrive whole: they travel percent-encoded in the form.
            #expect(Set(received.map(\.registrationID)) == Set((0..<16).map { XiaomiHarness.registrationID("d\($0)") }))
            #expect(received.allSatisfy {
                $0.packageName == XiaomiHarness.packageName
                    && $0.fields == [
                        "title": "Hello", "description": "News for you", "payload": #"{"id":7}"#, "pass_through": "0",
                        "notify_type": "-1", "extra.notify_effect": "1",
                    ]
            })
            // 16 ids at most 7 per request (the dispatcher's own batches may split them further).
            #expect(hub.emulator.batchSizes.reduce(0, +) == 16)
            #expect(hub.emulator.batchSizes.allSatisfy { $0 <= 7 })
            #expect(hub.emulator.batchSizes.count < 16)
            #expect(hub.emulator.recorder.violations.isEmpty)
        }
    }

    @Test func aThousandRegistrationIdsShareOneRequestAndDuplicatesOneId() async throws {
        try await XiaomiHarness.with { hub in
            let ids = (0..<1000).map { XiaomiHarness.registrationID("t\($0)") }
            let results = await hub.deliver(Self.notification, to: ids + [ids[0]])
            #expect(results.count == 1001)
            #expect(results.allSatisfy { $0 == .success })
            #expect(hub.emulator.batchSizes == [1000])
        }
    }

    @Test func templateSendsRenderPerInstallation() async throws {
        try await XiaomiHarness.with { hub in
            let template = InstallationTemplate(body: #"{"title":"$(title)","description":"For $(name)","payload":"$(title)"}"#)
            _ = try await hub.store.upsert(XiaomiHarness.installation("a", templates: ["t": template]))
            let summary = try await hub.send(.template, #"{"title":"Hello","name":"Ann"}"#)
            #expect(summary.counts == [.xiaomi: [.success: 1]])
            let received = try #require(hub.emulator.recorder.accepted.first)
            #expect(received.fields["title"] == "Hello" && received.fields["description"] == "For Ann" && received.fields["payload"] == "Hello")
        }
    }

    @Test func badRegistrationIdsArePrunedAndTheRestDelivered() async throws {
        try await XiaomiHarness.with { hub in
            for id in ["ok1", "gone", "ok2"] { _ = try await hub.store.upsert(XiaomiHarness.installation(id)) }
            hub.emulator.markInvalid([XiaomiHarness.registrationID("gone")])
            let summary = try await hub.send(.xiaomi, Self.notification)
            #expect(summary.counts == [.xiaomi: [.success: 2, .expiredChannel: 1]])
            #expect(try await hub.store.installation(id: "gone")?.expiredPushChannel == true)
            #expect(try await hub.store.installation(id: "ok1")?.expiredPushChannel == false)
            #expect(Set(hub.emulator.recorder.accepted.map(\.registrationID)) == [XiaomiHarness.registrationID("ok1"), XiaomiHarness.registrationID("ok2")])
        }
    }

    @Test func whenNoRegistrationIdIsValidEveryInstallationExpires() async throws {
        try await XiaomiHarness.with { hub in
            let ids = [XiaomiHarness.registrationID("x"), XiaomiHarness.registrationID("y")]
            hub.emulator.markInvalid(ids)
            let results = await hub.deliver(Self.notification, to: ids)
            #expect(results.map(\.outcome) == [.expiredChannel, .expiredChannel])
            #expect(results.allSatisfy { $0.reason == XiaomiReason.sendFailed.rawValue })
        }
    }

    @Test func malformedRegistrationIdsAndPayloadsAreRefusedWithoutARequest() async throws {
        try await XiaomiHarness.with { hub in
            let ids = await hub.deliver(Self.notification, to: ["short", "d//igwEhgBGCI2TG6lWqlK3,Vr1VdNjOl"])
            #expect(ids.allSatisfy { $0 == DeliveryResult(.badChannel, reason: "InvalidRegistrationId") })
            let id = XiaomiHarness.registrationID("p")
            let large = #"{"pass_through":1,"payload":""# + String(repeating: "y", count: 4097) + #""}"#
            let results = await hub.deliver(#"{"title":"Hi"}"#, to: [id])
                + (await hub.deliver(#"{"title":"Hi","description":"d","extra":{"n":1}}"#, to: [id]))
                + (await hub.deliver(large, to: [id]))
            #expect(results.map(\.reason) == ["10016", "10017", "65009"])
            #expect(results.map(\.outcome) == [.invalidNotificationFormat, .invalidNotificationFormat, .invalidNotificationSize])
            #expect(hub.emulator.sendRequestCount == 0)
            #expect(hub.emulator.recorder.violations.isEmpty)
        }
    }

    @Test func aWrongSecretEndsAsInvalidCredentialsIsLoggedAndNeverLeaks() async throws {
        let logs = CapturedLogs()
        try await XiaomiHarness.with { hub in
            let secret = "wrong-secret-that-must-not-leak"
            let adapter = try XiaomiAdapter(settings: hub.settings(secret: secret), logger: logs.logger())
            let results = await hub.deliver(Self.notification, to: [XiaomiHarness.registrationID("w")], with: adapter, logger: logs.logger())
            #expect(results == [DeliveryResult(.invalidCredentials, reason: "21301")])
            #expect(hub.emulator.recorder.acceptedCount == 0)
            try await adapter.shutdown()
            #expect(logs.text.contains("credentialsRejected") && logs.text.contains("21301"))
            #expect(!logs.text.contains(secret) && !logs.text.contains(XiaomiHarness.secret))
        }
    }

    @Test func aPackageNameNotTheAppsEndsAsInvalidCredentials() async throws {
        let logs = CapturedLogs()
        try await XiaomiHarness.with { hub in
            let adapter = try XiaomiAdapter(settings: hub.settings(packageNames: ["com.example.stranger"]), logger: logs.logger())
            let results = await hub.deliver(Self.notification, to: [XiaomiHarness.registrationID("p")], with: adapter, logger: logs.logger())
            #expect(results == [DeliveryResult(.invalidCredentials, reason: "22022")])
            try await adapter.shutdown()
            #expect(logs.text.contains("packageNameRejected"))
            // Several package names travel comma-separated, every one of them the app's.
            let both = try XiaomiAdapter(
                settings: hub.settings(packageNames: [XiaomiHarness.packageName, "com.example.other"]), logger: XiaomiHarness.logger)
            #expect(await hub.deliver(Self.notification, to: [XiaomiHarness.registrationID("q")], with: both) == [.success])
            #expect(hub.emulator.recorder.accepted.last?.packageName == "\(XiaomiHarness.packageName),com.example.other")
            try await both.shutdown()
        }
    }

    @Test func throttlingHonoursRetryAfterAndServerErrorsAreRetryable() async throws {
        try await XiaomiHarness.with { hub in
            let id = XiaomiHarness.registrationID("f")
            hub.emulator.setFaults(FaultInjection(throttleRate: 1, retryAfterSeconds: 7))
            #expect(await hub.deliver(Self.notification, to: [id]) == [DeliveryResult(.throttled, reason: "10027", retryAfter: .seconds(7))])
            hub.emulator.setFaults(FaultInjection(throttleRate: 1, retryAfterSeconds: 0))
            #expect(await hub.deliver(Self.notification, to: [id]) == [DeliveryResult(.throttled, reason: "10027", retryAfter: XiaomiAdapter.throttleBackoff)])
            hub.emulator.setFaults(FaultInjection(serverErrorRate: 1))
            #expect(await hub.deliver(Self.notification, to: [id]) == [DeliveryResult(.pnsUnavailable, reason: "10001")])
            hub.emulator.setFaults(FaultInjection(unavailableRate: 1, retryAfterSeconds: 3))
            #expect(await hub.deliver(Self.notification, to: [id]) == [DeliveryResult(.pnsUnavailable, reason: "10002", retryAfter: .seconds(3))])
            hub.emulator.setFaults(FaultInjection(dropConnectionRate: 1))
            #expect(await hub.deliver(Self.notification, to: [id]).map(\.outcome) == [.pnsUnreachable])
            hub.emulator.setFaults(.none)
            #expect(await hub.deliver(Self.notification, to: [id]) == [.success])
        }
    }

    @Test func theDispatcherRetriesThrottledDeliveriesUntilTheyPass() async throws {
        try await XiaomiHarness.with { hub in
            _ = try await hub.store.upsert(XiaomiHarness.installation("t"))
            hub.emulator.setFaults(FaultInjection(throttleRate: 0.5, retryAfterSeconds: 1))
            let summary = try await hub.send(.xiaomi, Self.notification)
            let counts = try #require(summary.counts[.xiaomi])
            #expect(counts.values.reduce(0, +) == 1)
            #expect(Set(counts.keys).isSubset(of: [.success, .throttled]))
            // Throttled on every attempt: the last attempt's outcome stands, after three requests.
            hub.emulator.setFaults(FaultInjection(throttleRate: 1, retryAfterSeconds: 1))
            hub.emulator.recorder.reset()
            let throttled = try await hub.send(.xiaomi, Self.notification)
            #expect(throttled.counts == [.xiaomi: [.throttled: 1]])
        }
    }

    @Test func aSendsExpiryBecomesTimeToLive() async throws {
        try await XiaomiHarness.with { hub in
            let id = XiaomiHarness.registrationID("e")
            let expiry = Date().addingTimeInterval(3600)
            let headers: NotificationHeaders = [NotificationHeaders.expiry: String(Int(expiry.timeIntervalSince1970))]
            #expect(await hub.deliver(Self.notification, to: [id], headers: headers) == [.success])
            let ttl = try #require(hub.emulator.recorder.accepted.last?.fields["time_to_live"].flatMap { Int64($0) })
            #expect((3_590_000...3_600_000).contains(ttl))
            // An expiry years ahead is capped at two weeks; an expiry already past sends the shortest lifetime.
            let far: NotificationHeaders = [NotificationHeaders.expiry: "9999-12-31T23:59:59Z"]
            #expect(await hub.deliver(Self.notification, to: [id], headers: far) == [.success])
            #expect(hub.emulator.recorder.accepted.last?.fields["time_to_live"] == String(XiaomiAdapter.maximumTimeToLive))
            let past: NotificationHeaders = [NotificationHeaders.expiry: "2001-01-01T00:00:00Z"]
            #expect(await hub.deliver(Self.notification, to: [id], headers: past) == [.success])
            #expect(hub.emulator.recorder.accepted.last?.fields["time_to_live"] == "1000")
            // A message's own time_to_live wins; an expiry that is not a time is left out.
            #expect(await hub.deliver(#"{"pass_through":1,"payload":"p","time_to_live":60000}"#, to: [id], headers: headers) == [.success])
            #expect(hub.emulator.recorder.accepted.last?.fields["time_to_live"] == "60000")
            #expect(await hub.deliver(Self.notification, to: [id], headers: [NotificationHeaders.expiry: "soon"]) == [.success])
            #expect(hub.emulator.recorder.accepted.last?.fields["time_to_live"] == nil)
        }
    }

    @Test func secureAnnouncementsCarryOnlyTheID() async throws {
        try await XiaomiHarness.with { hub in
            let silent = try #require(XiaomiAdapter.announcements(for: SecureAnnouncementRequest(id: "s1")).first)
            #expect(silent.format == .xiaomi)
            #expect(await hub.deliver(silent.body, to: [XiaomiHarness.registrationID("a")]) == [.success])
            #expect(hub.emulator.recorder.accepted.first?.fields == ["pass_through": "1", "payload": #"{"secureId":"s1"}"#])
            let visible = try #require(
                XiaomiAdapter.announcements(for: SecureAnnouncementRequest(id: "s2", alertText: String(repeating: "N", count: 60))).first)
            #expect(await hub.deliver(visible.body, to: [XiaomiHarness.registrationID("b")]) == [.success])
            let shown = try #require(hub.emulator.recorder.accepted.last?.fields)
            #expect(shown["pass_through"] == "0" && shown["payload"] == #"{"secureId":"s2"}"#)
            #expect(shown["title"] == String(repeating: "N", count: 49) && shown["description"] == String(repeating: "N", count: 60))
        }
    }

    @Test func secureNotificationsAnnounceOnlyTheirIdWithTheirLifetime() async throws {
        try await XiaomiHarness.with { harness in
            _ = try await harness.store.upsert(XiaomiHarness.installation("alice-phone", tags: ["username:alice"]))
            let hub = Hub(
                configuration: HubConfiguration(
                    name: "demo", delivery: XiaomiHarness.fast, adapters: try AdapterSet([harness.adapter]),
                    securePush: SecurePushConfiguration(encryptionKey: SymmetricKey(size: .bits256))),
                installations: harness.store, notifications: SQLNotificationStore(database: harness.store.database),
                secureNotifications: SQLSecureNotificationStore(database: harness.store.database),
                logger: XiaomiHarness.logger)
            let sent = try await hub.securePush.createSecureNotification(
                payload: Data(#"{"iban":"CH93-SECRET"}"#.utf8), audience: .tag("username:alice"), timeToLiveSeconds: 300,
                readOnce: false)
            #expect(sent.notificationIDs.count == 1, "one id-only send in the xiaomi format")
            let record = try #require(try await hub.sends.record(id: sent.notificationIDs[0]))
            #expect(record.notification.format == .xiaomi)
            let summary = try await hub.dispatcher.dispatch(record.notification)
            #expect(summary.counts == [.xiaomi: [.success: 1]])
            let message = try #require(harness.emulator.recorder.accepted.first)
            #expect(message.registrationID == XiaomiHarness.registrationID("alice-phone"))
            #expect(message.fields["payload"] == #"{"secureId":"\#(sent.id)"}"#)
            #expect(message.fields["pass_through"] == "1")
            #expect(!message.fields.values.contains { $0.contains("CH93") })
            let ttl = try #require(message.fields["time_to_live"].flatMap { Int64($0) })
            #expect((290_000...300_000).contains(ttl), "the time_to_live is the secure notification's lifetime")
        }
    }
}
