import ADM
import Foundation
import HubTestSupport
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@Suite struct ADMDeliveryTests {
    static let data = #"{"data":{"text":"hi","from":"ann"},"consolidationKey":"news","expiresAfter":3600}"#

    @Test func nativeSendsReachEveryDeviceWithOneAccessToken() async throws {
        try await ADMHarness.with { hub in
            for index in 0..<12 {
                _ = try await hub.store.upsert(ADMHarness.installation("d\(index)", tags: index < 9 ? ["news"] : []))
            }
            let (summary, replaced) = try await hub.send(.adm, Self.data, to: .tags(.tag("news")))
            #expect(summary.counts == [.adm: [.success: 9]])
            #expect(replaced.isEmpty)
            let received = hub.emulator.recorder.accepted
            // Ids holding "/" and "+" arrive whole: they travel percent-encoded as one path segment.
            #expect(Set(received.map(\.registrationID)) == Set((0..<9).map { ADMHarness.registrationID("d\($0)") }))
            #expect(received.allSatisfy { $0.data == ["text": "hi", "from": "ann"] && $0.consolidationKey == "news" && $0.expiresAfter == 3600 })
            #expect(hub.emulator.tokenRequestCount == 1)
            #expect(await hub.adapter.tokens.requestCount == 1)
            #expect(hub.emulator.recorder.violations.isEmpty)
        }
    }

    @Test func templateSendsRenderPerInstallation() async throws {
        try await ADMHarness.with { hub in
            let template = InstallationTemplate(body: #"{"data":{"title":"$(title)","body":"For $(name)"}}"#)
            _ = try await hub.store.upsert(ADMHarness.installation("a", templates: ["t": template]))
            let (summary, _) = try await hub.send(.template, #"{"title":"Hello","name":"Ann"}"#)
            #expect(summary.counts == [.adm: [.success: 1]])
            let received = try #require(hub.emulator.recorder.accepted.first)
            #expect(received.data == ["title": "Hello", "body": "For Ann"])
        }
    }

    @Test func anUnregisteredAppInstanceExpiresItsInstallation() async throws {
        try await ADMHarness.with { hub in
            for id in ["ok", "gone"] { _ = try await hub.store.upsert(ADMHarness.installation(id)) }
            hub.emulator.markUnregistered([ADMHarness.registrationID("gone")])
            let (summary, _) = try await hub.send(.adm, Self.data)
            #expect(summary.counts == [.adm: [.success: 1, .expiredChannel: 1]])
            #expect(try await hub.store.installation(id: "gone")?.expiredPushChannel == true)
            #expect(try await hub.store.installation(id: "ok")?.expiredPushChannel == false)
            #expect(hub.emulator.recorder.accepted.map(\.registrationID) == [ADMHarness.registrationID("ok")])
        }
    }

    @Test func anInvalidRegistrationIdIsABadChannel() async throws {
        try await ADMHarness.with { hub in
            let id = ADMHarness.registrationID("bad")
            hub.emulator.markInvalid([id])
            #expect(await hub.deliver(Self.data, to: [id]) == [DeliveryResult(.badChannel, reason: "InvalidRegistrationId")])
            #expect(hub.emulator.sendRequestCount == 1)
        }
    }

    @Test func unknownRegistrationsAreRefusedWhenTheEmulatorKnowsOnlyRegisteredOnes() async throws {
        try await ADMHarness.with(acceptsUnknownRegistrations: false) { hub in
            let known = ADMHarness.registrationID("known")
            hub.emulator.register([known])
            let results = await hub.deliver(Self.data, to: [known, ADMHarness.registrationID("stranger")])
            #expect(results == [.success, DeliveryResult(.badChannel, reason: "InvalidRegistrationId")])
        }
    }

    @Test func malformedRegistrationIdsAreRefusedWithoutARequest() async throws {
        try await ADMHarness.with { hub in
            let results = await hub.deliver(Self.data, to: ["not-an-adm-id", "amzn1.adm-registration.has space"])
            #expect(results.allSatisfy { $0 == DeliveryResult(.badChannel, reason: "InvalidRegistrationId") })
            #expect(hub.emulator.sendRequestCount == 0)
            #expect(hub.emulator.tokenRequestCount == 0)
        }
    }

    @Test func aNewRegistrationIdInTheAnswerReplacesTheChannel() async throws {
        try await ADMHarness.with { hub in
            let old = ADMHarness.registrationID("old")
            let new = ADMHarness.registrationID("renewed")
            hub.emulator.replace(old, with: new)
            #expect(await hub.deliver(Self.data, to: [old]) == [DeliveryResult(.success, canonicalPushChannel: new)])
            _ = try await hub.store.upsert(ADMHarness.installation("old"))
            let (summary, replaced) = try await hub.send(.adm, Self.data)
            #expect(summary.counts == [.adm: [.success: 1]])
            let replacement = try #require(replaced.first)
            #expect(replaced.count == 1)
            #expect(replacement.installationID == "old" && replacement.canonical == new && replacement.pushChannel == .handle(old))
        }
    }

    @Test func anExpiredAccessTokenIsRenewedOnceAndTheMessageResent() async throws {
        try await ADMHarness.with { hub in
            let id = ADMHarness.registrationID("r")
            #expect(await hub.deliver(Self.data, to: [id]) == [.success])
            hub.emulator.expireAccessTokens()
            #expect(await hub.deliver(Self.data, to: [id]) == [.success])
            #expect(hub.emulator.tokenRequestCount == 2)
            #expect(await hub.adapter.tokens.requestCount == 2)
            #expect(hub.emulator.recorder.acceptedCount == 2)
        }
    }

    @Test func aTokenRefusedTwiceEndsAsInvalidCredentials() async throws {
        try await ADMHarness.with { hub in
            let refusal = RawAnswer(
                status: 401, headers: [.init("Content-Type", "application/json")], body: Array(#"{"reason":"AccessTokenExpired"}"#.utf8))
            hub.emulator.setFaults(FaultInjection(answer: refusal))
            let results = await hub.deliver(Self.data, to: [ADMHarness.registrationID("x")])
            #expect(results == [DeliveryResult(.invalidCredentials, reason: "AccessTokenExpired")])
            // One renewal, not a loop.
            #expect(await hub.adapter.tokens.requestCount == 2)
        }
    }

    @Test func theAccessTokenIsRenewedBeforeItExpires() async throws {
        try await ADMHarness.with { hub in
            let clock = ManualWallClock()
            let adapter = try ADMAdapter(settings: hub.settings(margin: .seconds(300)), logger: ADMHarness.logger, clock: clock)
            let id = ADMHarness.registrationID("s")
            #expect(await hub.deliver(Self.data, to: [id], with: adapter) == [.success])
            clock.advance(by: 3000)
            #expect(await hub.deliver(Self.data, to: [id], with: adapter) == [.success])
            #expect(await adapter.tokens.requestCount == 1)
            // Less than the margin is left of the hour: a new token before ADM would refuse the old one.
            clock.advance(by: 301)
            #expect(await hub.deliver(Self.data, to: [id], with: adapter) == [.success])
            #expect(await adapter.tokens.requestCount == 2)
            #expect(hub.emulator.tokenRequestCount == 2)
            try await adapter.shutdown()
        }
    }

    @Test func aWrongSecretEndsAsInvalidCredentialsAndIsNeverLogged() async throws {
        let logs = CapturedLogs()
        try await ADMHarness.with { hub in
            let secret = "wrong-secret-that-must-not-leak"
            let adapter = try ADMAdapter(settings: hub.settings(secret: secret), logger: logs.logger())
            let results = await hub.deliver(Self.data, to: [ADMHarness.registrationID("w")], with: adapter)
            #expect(results == [DeliveryResult(.invalidCredentials, reason: "TokenRejected")])
            #expect(hub.emulator.recorder.acceptedCount == 0)
            try await adapter.shutdown()
            #expect(logs.text.contains("invalid_client"))
            #expect(!logs.text.contains(secret))
        }
    }

    @Test func accessTokensAndSecretsNeverReachTheLogs() async throws {
        let logs = CapturedLogs()
        try await ADMHarness.with { hub in
            let adapter = try ADMAdapter(settings: hub.settings(), logger: logs.logger())
            let id = ADMHarness.registrationID("l")
            #expect(await hub.deliver(Self.data, to: [id], with: adapter) == [.success])
            hub.emulator.expireAccessTokens()
            let deliveries = [
                Delivery(
                    notificationID: "n", installationID: nil, platform: .adm, pushChannel: .handle(id), format: .adm,
                    payload: ByteBuffer(string: Self.data), headers: [:])
            ]
            #expect(await adapter.deliver(deliveries, context: .standalone(logger: logs.logger())) == [.success])
            let token = try await adapter.tokens.token()
            try await adapter.shutdown()
            #expect(logs.text.contains("AccessTokenExpired"))
            #expect(!logs.text.contains(token.value) && !logs.text.contains(ADMHarness.secret))
        }
    }

    @Test func throttlingHonoursRetryAfterAndServerErrorsAreRetryable() async throws {
        try await ADMHarness.with { hub in
            let id = ADMHarness.registrationID("f")
            hub.emulator.setFaults(FaultInjection(throttleRate: 1, retryAfterSeconds: 7))
            #expect(await hub.deliver(Self.data, to: [id]) == [DeliveryResult(.throttled, reason: "MaxRateExceeded", retryAfter: .seconds(7))])
            hub.emulator.setFaults(FaultInjection(throttleRate: 1, retryAfterSeconds: 0))
            #expect(await hub.deliver(Self.data, to: [id]) == [DeliveryResult(.throttled, reason: "MaxRateExceeded", retryAfter: ADMAdapter.throttleBackoff)])
            hub.emulator.setFaults(FaultInjection(serverErrorRate: 1))
            #expect(await hub.deliver(Self.data, to: [id]) == [DeliveryResult(.pnsUnavailable, reason: "InternalServerError")])
            hub.emulator.setFaults(FaultInjection(unavailableRate: 1, retryAfterSeconds: 3))
            #expect(await hub.deliver(Self.data, to: [id]) == [DeliveryResult(.pnsUnavailable, reason: "ServiceUnavailable", retryAfter: .seconds(3))])
            hub.emulator.setFaults(FaultInjection(dropConnectionRate: 1))
            #expect(await hub.deliver(Self.data, to: [id]).map(\.outcome) == [.pnsUnreachable])
            hub.emulator.setFaults(.none)
            #expect(await hub.deliver(Self.data, to: [id]) == [.success])
        }
    }

    @Test func theDispatcherRetriesThrottledDeliveriesUntilTheyPass() async throws {
        try await ADMHarness.with { hub in
            _ = try await hub.store.upsert(ADMHarness.installation("t"))
            hub.emulator.setFaults(FaultInjection(throttleRate: 0.5, retryAfterSeconds: 1))
            // Retried after ADM's Retry-After, up to three attempts; with no luck at all it ends throttled, never lost.
            let (summary, _) = try await hub.send(.adm, Self.data)
            let counts = try #require(summary.counts[.adm])
            #expect(counts.values.reduce(0, +) == 1)
            #expect(Set(counts.keys).isSubset(of: [.success, .throttled]))
            // Throttled on every attempt: the last attempt's outcome stands.
            hub.emulator.setFaults(FaultInjection(throttleRate: 1, retryAfterSeconds: 1))
            let (throttled, _) = try await hub.send(.adm, Self.data)
            #expect(throttled.counts == [.adm: [.throttled: 1]])
        }
    }

    @Test func aChecksumIsCheckedAgainstTheData() async throws {
        try await ADMHarness.with { hub in
            let id = ADMHarness.registrationID("m")
            let right = ADMEmulator.checksum(of: ["k": "v", "a": "b"])
            #expect(await hub.deliver(#"{"data":{"k":"v","a":"b"},"md5":"\#(right)"}"#, to: [id]) == [.success])
            let wrong = Data(repeating: 7, count: 16).base64EncodedString()
            let results = await hub.deliver(#"{"data":{"k":"v","a":"b"},"md5":"\#(wrong)"}"#, to: [id])
            #expect(results == [DeliveryResult(.invalidNotificationFormat, reason: "InvalidChecksum")])
            #expect(hub.emulator.recorder.acceptedCount == 1)
        }
    }

    @Test func renderedPayloadsADMWouldRefuseAreNeverSent() async throws {
        try await ADMHarness.with { hub in
            let id = ADMHarness.registrationID("p")
            let large = #"{"data":{"x":""# + String(repeating: "y", count: 6200) + #""}}"#
            let results = await hub.deliver(#"{"data":{"n":1}}"#, to: [id])
                + (await hub.deliver(#"{"data":{},"expiresAfter":30}"#, to: [id]))
                + (await hub.deliver(#"{"data":{},"consolidationKey":"\#(String(repeating: "k", count: 65))"}"#, to: [id]))
                + (await hub.deliver(large, to: [id]))
            #expect(results.map(\.reason) == ["InvalidData", "InvalidExpiration", "InvalidConsolidationKey", "MessageTooLarge"])
            #expect(results.map(\.outcome) == [.invalidNotificationFormat, .invalidNotificationFormat, .invalidNotificationFormat, .invalidNotificationSize])
            #expect(hub.emulator.sendRequestCount == 0)
        }
    }

    @Test func secureAnnouncementsCarryOnlyTheID() async throws {
        try await ADMHarness.with { hub in
            let silent = try #require(ADMAdapter.announcements(for: SecureAnnouncementRequest(id: "s1")).first)
            #expect(silent.format == .adm)
            #expect(await hub.deliver(silent.body, to: [ADMHarness.registrationID("a")]) == [.success])
            #expect(hub.emulator.recorder.accepted.first?.data == ["secureId": "s1"])
            let visible = try #require(ADMAdapter.announcements(for: SecureAnnouncementRequest(id: "s2", alertText: "New")).first)
            #expect(await hub.deliver(visible.body, to: [ADMHarness.registrationID("b")]) == [.success])
            #expect(hub.emulator.recorder.accepted.last?.data == ["secureId": "s2", "alertText": "New"])
        }
    }
}
