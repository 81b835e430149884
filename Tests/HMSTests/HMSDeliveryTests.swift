import Foundation
import HMS
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@Suite struct HMSDeliveryTests {
    static let data = #"{"message":{"data":"{\"text\":\"hi\"}"}}"#

    @Test func nativeSendsGoOutInBatchesWithOneAccessToken() async throws {
        try await HMSHarness.with(batchSize: 7) { hub in
            for index in 0..<20 {
                _ = try await hub.store.upsert(HMSHarness.installation("d\(index)", tags: index < 16 ? ["news"] : []))
            }
            let summary = try await hub.send(.hms, Self.data, to: .tags(.tag("news")))
            #expect(summary.counts == [.hms: [.success: 16]])
            let received = hub.emulator.recorder.accepted
            #expect(Set(received.map(\.token)) == Set((0..<16).map { HMSHarness.token("d\($0)") }))
            #expect(received.allSatisfy { $0.message == #"{"data":"{\"text\":\"hi\"}"}"# })
            // 16 tokens at most 7 per request (the dispatcher's own batches may split them further).
            #expect(hub.emulator.batchSizes.reduce(0, +) == 16)
            #expect(hub.emulator.batchSizes.allSatisfy { $0 <= 7 })
            #expect(hub.emulator.batchSizes.count < 16)
            #expect(hub.emulator.tokenRequestCount == 1)
            #expect(hub.emulator.recorder.violations.isEmpty)
        }
    }

    @Test func aThousandTokensShareOneRequest() async throws {
        try await HMSHarness.with { hub in
            let tokens = (0..<1000).map { HMSHarness.token("t\($0)") }
            let results = await hub.deliver(Self.data, to: tokens)
            #expect(results.allSatisfy { $0 == .success })
            #expect(hub.emulator.batchSizes == [1000])
        }
    }

    @Test func templateSendsRenderPerInstallation() async throws {
        try await HMSHarness.with { hub in
            let template = InstallationTemplate(
                body: #"{"message":{"android":{"notification":{"title":"$(title)","body":"For $(name)","click_action":{"type":3}}}}}"#)
            _ = try await hub.store.upsert(HMSHarness.installation("a", templates: ["t": template]))
            let summary = try await hub.send(.template, #"{"title":"Hello","name":"Ann"}"#)
            #expect(summary.counts == [.hms: [.success: 1]])
            let received = try #require(hub.emulator.recorder.accepted.first)
            #expect(received.message.contains(#""title":"Hello""#) && received.message.contains("For Ann"))
        }
    }

    @Test func illegalTokensArePrunedAndTheRestDelivered() async throws {
        try await HMSHarness.with { hub in
            for id in ["ok1", "gone", "ok2"] { _ = try await hub.store.upsert(HMSHarness.installation(id)) }
            hub.emulator.markIllegal([HMSHarness.token("gone")])
            let summary = try await hub.send(.hms, Self.data)
            #expect(summary.counts == [.hms: [.success: 2, .expiredChannel: 1]])
            #expect(try await hub.store.installation(id: "gone")?.expiredPushChannel == true)
            #expect(try await hub.store.installation(id: "ok1")?.expiredPushChannel == false)
            #expect(hub.emulator.recorder.accepted.count == 2)
        }
    }

    @Test func whenEveryTokenIsIllegalEveryInstallationExpires() async throws {
        try await HMSHarness.with { hub in
            let tokens = [HMSHarness.token("x"), HMSHarness.token("y")]
            hub.emulator.markIllegal(tokens)
            let results = await hub.deliver(Self.data, to: tokens)
            #expect(results.map(\.outcome) == [.expiredChannel, .expiredChannel])
            #expect(results.allSatisfy { $0.reason == HMSReason.allTokensInvalid.rawValue })
        }
    }

    @Test func anExpiredAccessTokenIsRenewedOnceAndTheBatchResent() async throws {
        try await HMSHarness.with { hub in
            let token = HMSHarness.token("r")
            #expect(await hub.deliver(Self.data, to: [token]) == [.success])
            hub.emulator.expireAccessTokens()
            #expect(await hub.deliver(Self.data, to: [token]) == [.success])
            #expect(hub.emulator.tokenRequestCount == 2)
            #expect(await hub.adapter.tokens.requestCount == 2)
            #expect(hub.emulator.recorder.acceptedCount == 2)
        }
    }

    @Test func theAccessTokenIsRenewedBeforeItExpires() async throws {
        try await HMSHarness.with { hub in
            let clock = ManualWallClock()
            let adapter = try HMSAdapter(settings: hub.settings(margin: .seconds(300)), logger: HMSHarness.logger, clock: clock)
            let token = HMSHarness.token("s")
            #expect(await hub.deliver(Self.data, to: [token], with: adapter) == [.success])
            clock.advance(by: 3000)
            #expect(await hub.deliver(Self.data, to: [token], with: adapter) == [.success])
            #expect(await adapter.tokens.requestCount == 1)
            // Less than the margin is left of the hour: a new token before Push Kit would refuse the old one.
            clock.advance(by: 301)
            #expect(await hub.deliver(Self.data, to: [token], with: adapter) == [.success])
            #expect(await adapter.tokens.requestCount == 2)
            #expect(hub.emulator.tokenRequestCount == 2)
            try await adapter.shutdown()
        }
    }

    @Test func aWrongSecretEndsAsInvalidCredentials() async throws {
        try await HMSHarness.with { hub in
            let adapter = try HMSAdapter(settings: hub.settings(secret: "wrong"), logger: HMSHarness.logger)
            let results = await hub.deliver(Self.data, to: [HMSHarness.token("w")], with: adapter)
            #expect(results == [DeliveryResult(.invalidCredentials, reason: "TokenRejected")])
            #expect(hub.emulator.recorder.acceptedCount == 0)
            try await adapter.shutdown()
        }
    }

    @Test func trafficControlIsThrottledWithRetryAfterAndServerErrorsRetried() async throws {
        try await HMSHarness.with { hub in
            let token = HMSHarness.token("f")
            hub.emulator.setFaults(FaultInjection(throttleRate: 1, retryAfterSeconds: 7))
            #expect(await hub.deliver(Self.data, to: [token]) == [DeliveryResult(.throttled, reason: "80600003", retryAfter: .seconds(7))])
            hub.emulator.setFaults(FaultInjection(throttleRate: 1, retryAfterSeconds: 0))
            #expect(await hub.deliver(Self.data, to: [token]) == [DeliveryResult(.throttled, reason: "80600003", retryAfter: HMSAdapter.throttleBackoff)])
            hub.emulator.setFaults(FaultInjection(serverErrorRate: 1))
            #expect(await hub.deliver(Self.data, to: [token]) == [DeliveryResult(.pnsUnavailable, reason: "81000001")])
            hub.emulator.setFaults(.none)
            #expect(await hub.deliver(Self.data, to: [token]) == [.success])
        }
    }

    @Test func theDispatcherRetriesThrottledDeliveriesUntilTheyPass() async throws {
        try await HMSHarness.with { hub in
            _ = try await hub.store.upsert(HMSHarness.installation("t"))
            hub.emulator.setFaults(FaultInjection(throttleRate: 0.5, retryAfterSeconds: 1))
            // Retried after Push Kit's Retry-After, up to three attempts; with no luck at all it ends throttled, never
            // abandoned or lost.
            let summary = try await hub.send(.hms, Self.data)
            let counts = try #require(summary.counts[.hms])
            #expect(counts.values.reduce(0, +) == 1)
            #expect(Set(counts.keys).isSubset(of: [.success, .throttled]))
        }
    }

    @Test func theLatencyFaultDelaysAnswers() async throws {
        try await HMSHarness.with { hub in
            hub.emulator.setFaults(FaultInjection(latency: .milliseconds(200)))
            let clock = ContinuousClock()
            let started = clock.now
            #expect(await hub.deliver(Self.data, to: [HMSHarness.token("l")]) == [.success])
            #expect(clock.now - started >= .milliseconds(200))
        }
    }

    @Test func secureAnnouncementsCarryOnlyTheID() async throws {
        try await HMSHarness.with { hub in
            let silent = try #require(HMSAdapter.announcements(for: SecureAnnouncementRequest(id: "s1")).first)
            #expect(silent.format == .hms)
            #expect(await hub.deliver(silent.body, to: [HMSHarness.token("a")]) == [.success])
            let received = try #require(hub.emulator.recorder.accepted.first)
            #expect(received.message == #"{"data":"{\"secureId\":\"s1\"}"}"#)
            let visible = try #require(HMSAdapter.announcements(for: SecureAnnouncementRequest(id: "s2", alertText: "New")).first)
            #expect(visible.body.contains(#""title":"New""#) && visible.body.contains("s2"))
            #expect(await hub.deliver(visible.body, to: [HMSHarness.token("b")]) == [.success])
        }
    }
}
