import FCM
import Foundation
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@Suite struct FCMDeliveryTests {
    @Test func fcmv1SendsReachEveryInstallationWithOneAccessToken() async throws {
        try await FCMHarness.with { hub in
            for index in 0..<30 {
                _ = try await hub.store.upsert(FCMHarness.installation("d\(index)", tags: index % 3 == 0 ? ["news"] : ["sports"]))
            }
            let summary = try await hub.send(
                .fcmv1, #"{"message":{"data":{"text":"hi","count":7,"urgent":true},"android":{"priority":"HIGH"}}}"#,
                to: .tags(.tag("sports")))
            #expect(summary.counts == [.fcmv1: [.success: 20]])
            let received = hub.emulator.recorder.accepted
            #expect(Set(received.map(\.token)) == Set((0..<30).filter { $0 % 3 != 0 }.map { FCMHarness.token("d\($0)") }))
            let message = try #require(received.first?.message)
            #expect(message["data"] == ["text": "hi", "count": "7", "urgent": "true"])
            #expect(message["android"] == ["priority": "HIGH"])
            #expect(received.allSatisfy { $0.headers["content-type"]?.hasPrefix("application/json") == true })
            // Twenty concurrent sends shared one OAuth token request (single flight, then the cache).
            #expect(hub.emulator.tokenRequestCount == 1)
            #expect(await hub.adapter.tokens.requestCount == 1)
            _ = try await hub.send(.fcmv1, #"{"message":{"notification":{"title":"t"}}}"#)
            #expect(hub.emulator.tokenRequestCount == 1)
            #expect(hub.emulator.recorder.violations.isEmpty)
        }
    }

    @Test func gcmPayloadsAreTranslatedToV1() async throws {
        try await FCMHarness.with { hub in
            _ = try await hub.store.upsert(FCMHarness.installation("legacy", platform: .gcm))
            _ = try await hub.store.upsert(FCMHarness.installation("modern", platform: .fcmv1))
            let summary = try await hub.send(
                .gcm,
                #"{"data":{"k":"v","n":1.5},"notification":{"title":"T","body":"B","icon":"ic","android_channel_id":"ch"},"priority":"high","time_to_live":120,"collapse_key":"ck"}"#
            )
            #expect(summary.counts == [.gcm: [.success: 1]])
            let received = try #require(hub.emulator.recorder.accepted.first)
            #expect(received.token == FCMHarness.token("legacy"))
            #expect(received.message["data"] == ["k": "v", "n": "1.5"])
            #expect(received.message["notification"] == ["title": "T", "body": "B"])
            #expect(
                received.message["android"]
                    == [
                        "priority": "HIGH", "ttl": "120s", "collapse_key": "ck",
                        "notification": ["icon": "ic", "channel_id": "ch"],
                    ])
        }
    }

    @Test func templateSendsRenderForFCMv1AndGCMInstallations() async throws {
        try await FCMHarness.with { hub in
            _ = try await hub.store.upsert(
                FCMHarness.installation(
                    "v1", templates: ["t": InstallationTemplate(body: #"{"message":{"data":{"msg":"$(text)"}}}"#)]))
            _ = try await hub.store.upsert(
                FCMHarness.installation(
                    "old", platform: .gcm,
                    templates: ["t": InstallationTemplate(body: #"{"data":{"msg":"$(text)"},"priority":"normal"}"#)]))
            let summary = try await hub.send(.template, #"{"text":"hello"}"#)
            #expect(summary.counts == [.fcmv1: [.success: 1], .gcm: [.success: 1]])
            let byToken = Dictionary(uniqueKeysWithValues: hub.emulator.recorder.accepted.map { ($0.token, $0.message) })
            #expect(byToken[FCMHarness.token("v1")]?["data"] == ["msg": "hello"])
            #expect(byToken[FCMHarness.token("old")]?["data"] == ["msg": "hello"])
            #expect(byToken[FCMHarness.token("old")]?["android"] == ["priority": "NORMAL"])
        }
    }

    @Test func templatesRenderingReservedKeysAreFormatErrors() async throws {
        try await FCMHarness.with { hub in
            _ = try await hub.store.upsert(
                FCMHarness.installation(
                    "bad", templates: ["t": InstallationTemplate(body: #"{"message":{"data":{"from":"$(text)"}}}"#)]))
            let summary = try await hub.send(.template, #"{"text":"x"}"#)
            #expect(summary.counts == [.fcmv1: [.invalidNotificationFormat: 1]])
            #expect(hub.emulator.recorder.acceptedCount == 0)
        }
    }

    @Test func unregisteredTokensExpireTheirInstallations() async throws {
        try await FCMHarness.with { hub in
            _ = try await hub.store.upsert(FCMHarness.installation("gone"))
            _ = try await hub.store.upsert(FCMHarness.installation("ok"))
            hub.emulator.unregister([FCMHarness.token("gone")])
            let first = try await hub.send(.fcmv1, #"{"message":{"data":{"a":"1"}}}"#)
            #expect(first.counts == [.fcmv1: [.success: 1, .expiredChannel: 1]])
            #expect(try await hub.store.installation(id: "gone")?.expiredPushChannel == true)
            #expect(try await hub.store.installation(id: "ok")?.expiredPushChannel == false)
            let second = try await hub.send(.fcmv1, #"{"message":{"data":{"a":"2"}}}"#)
            #expect(second.counts == [.fcmv1: [.success: 1]])
        }
    }

    @Test func deletePolicyPrunesUnregisteredInstallations() async throws {
        var delivery = FCMHarness.fast
        delivery.expiredChannelPolicy = .delete
        try await FCMHarness.with(delivery: delivery) { hub in
            _ = try await hub.store.upsert(FCMHarness.installation("gone", platform: .gcm))
            hub.emulator.unregister([FCMHarness.token("gone")])
            let summary = try await hub.send(.gcm, #"{"data":{"a":"1"}}"#)
            #expect(summary.counts == [.gcm: [.expiredChannel: 1]])
            #expect(try await hub.store.installation(id: "gone") == nil)
        }
    }

    @Test func directSendsGoToTheGivenHandles() async throws {
        try await FCMHarness.with { hub in
            let handles = [FCMHarness.token("x1"), FCMHarness.token("x2")]
            let summary = try await hub.send(.gcm, #"{"notification":{"title":"t"}}"#, to: .handles(.gcm, handles.map { .handle($0) }))
            #expect(summary.counts == [.gcm: [.success: 2]])
            #expect(Set(hub.emulator.recorder.accepted.map(\.token)) == Set(handles))
            #expect(hub.emulator.recorder.accepted.allSatisfy { $0.message["notification"] == ["title": "t"] })
        }
    }

    @Test func platformErrorsMapToOutcomes() async throws {
        try await FCMHarness.with { hub in
            let mismatch = FCMHarness.token("mismatch")
            let thirdParty = FCMHarness.token("apns-auth")
            hub.emulator.markSenderMismatch([mismatch])
            hub.emulator.markThirdPartyAuthError([thirdParty])
            let ok = #"{"message":{"data":{"a":"1"}}}"#

            let badToken = await hub.deliver(.fcmv1, ok, to: "short!token")
            #expect(badToken.outcome == .badChannel)
            #expect(badToken.reason == "INVALID_ARGUMENT")

            let badField = await hub.deliver(.fcmv1, #"{"message":{"android":{"priority":"URGENT"}}}"#, to: FCMHarness.token("a"))
            #expect(badField.outcome == .invalidNotificationFormat)

            let wrong = await hub.deliver(.fcmv1, ok, to: mismatch)
            #expect(wrong == DeliveryResult(.wrongChannel, reason: "SENDER_ID_MISMATCH"))

            let tokensBefore = hub.emulator.tokenRequestCount
            let auth = await hub.deliver(.fcmv1, ok, to: thirdParty)
            #expect(auth == DeliveryResult(.invalidCredentials, reason: "THIRD_PARTY_AUTH_ERROR"))
            // A 401 renews the access token once before giving up.
            #expect(hub.emulator.tokenRequestCount == tokensBefore + 1)

            let tooBig = await hub.deliver(
                .fcmv1, #"{"message":{"data":{"a":"\#(String(repeating: "x", count: 5000))"}}}"#, to: FCMHarness.token("a"))
            #expect(tooBig.outcome == .invalidNotificationSize)
            #expect(hub.emulator.recorder.acceptedCount == 0)
        }
    }

    @Test func retryableErrorsCarryRetryAfter() async throws {
        try await FCMHarness.with { hub in
            let token = FCMHarness.token("r")
            let ok = #"{"message":{"data":{"a":"1"}}}"#
            hub.emulator.setFaults(FaultInjection(throttleRate: 1, retryAfterSeconds: 7))
            #expect(await hub.deliver(.fcmv1, ok, to: token) == DeliveryResult(.throttled, reason: "QUOTA_EXCEEDED", retryAfter: .seconds(7)))
            hub.emulator.setFaults(FaultInjection(throttleRate: 1, retryAfterSeconds: 0))
            // Without Retry-After, quota errors back off at least 60 s.
            #expect(await hub.deliver(.fcmv1, ok, to: token) == DeliveryResult(.throttled, reason: "QUOTA_EXCEEDED", retryAfter: .seconds(60)))
            hub.emulator.setFaults(FaultInjection(unavailableRate: 1, retryAfterSeconds: 3))
            #expect(await hub.deliver(.fcmv1, ok, to: token) == DeliveryResult(.pnsUnavailable, reason: "UNAVAILABLE", retryAfter: .seconds(3)))
            hub.emulator.setFaults(FaultInjection(serverErrorRate: 1))
            #expect(await hub.deliver(.fcmv1, ok, to: token) == DeliveryResult(.pnsUnavailable, reason: "INTERNAL"))
            hub.emulator.setFaults(FaultInjection(dropConnectionRate: 1))
            #expect(await hub.deliver(.fcmv1, ok, to: token).outcome == .pnsUnreachable)
            hub.emulator.setFaults(.none)
            #expect(await hub.deliver(.fcmv1, ok, to: token) == .success)
        }
    }

    @Test func dispatcherHonoursRetryAfter() async throws {
        var delivery = FCMHarness.fast
        delivery.abandonAfterSeconds = 5
        try await FCMHarness.with(delivery: delivery) { hub in
            _ = try await hub.store.upsert(FCMHarness.installation("slow"))
            // FCM asks for 120 s: more than the abandon window, so the hub abandons instead of retrying early.
            hub.emulator.setFaults(FaultInjection(throttleRate: 1, retryAfterSeconds: 120))
            let summary = try await hub.send(.fcmv1, #"{"message":{"data":{"a":"1"}}}"#)
            #expect(summary.counts == [.fcmv1: [.abandoned: 1]])
            #expect(hub.emulator.recorder.acceptedCount == 0)
            // A short Retry-After is waited out and the retry succeeds.
            hub.emulator.setFaults(FaultInjection(unavailableRate: 1, retryAfterSeconds: 1))
            async let second = hub.send(.fcmv1, #"{"message":{"data":{"a":"2"}}}"#)
            try await Task.sleep(for: .milliseconds(200))
            hub.emulator.setFaults(.none)
            #expect(try await second.counts == [.fcmv1: [.success: 1]])
        }
    }

    @Test func connectionFailuresAreUnreachable() async throws {
        try await FCMHarness.with { hub in
            let ok = #"{"message":{"data":{"a":"1"}}}"#
            // The send endpoint refuses connections (nothing listens on port 1).
            let noSend = try hub.makeAdapter(endpoint: "https://127.0.0.1:1", connectTimeout: .milliseconds(500))
            #expect(await hub.deliver(.fcmv1, ok, to: FCMHarness.token("a"), with: noSend).outcome == .pnsUnreachable)
            try await noSend.shutdown()
            // The token endpoint refuses connections.
            let noToken = try hub.makeAdapter(
                serviceAccount: FCMHarness.serviceAccountJSON(port: hub.ports.service, tokenURI: "https://127.0.0.1:1/token"),
                connectTimeout: .milliseconds(500))
            #expect(await hub.deliver(.fcmv1, ok, to: FCMHarness.token("a"), with: noToken) == DeliveryResult(.pnsUnreachable, reason: "TokenEndpointUnreachable"))
            try await noToken.shutdown()
        }
    }
}
