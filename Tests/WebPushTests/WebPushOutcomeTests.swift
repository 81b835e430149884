import Foundation
import NIOCore
import NotificationHub
import PushEmulator
import Testing
import WebPush

/// Every push service answer maps to its outcome; gone subscriptions are pruned like other platforms' channels;
/// bad input never leaves the hub.
@Suite struct WebPushOutcomeTests {
    @Test func goneSubscriptionsExpireTheirInstallations() async throws {
        try await WebPushHarness.with { hub in
            let gone = try await hub.register("gone")
            let unknown = try await hub.register("unknown")
            try await hub.register("fine")
            hub.emulator.expire(gone.id)
            hub.emulator.remove(unknown.id)
            let summary = try await hub.send("hello")
            #expect(summary.counts == [.browser: [.success: 1, .expiredChannel: 2]])
            #expect(try await hub.store.installation(id: "gone")?.expiredPushChannel == true)
            #expect(try await hub.store.installation(id: "unknown")?.expiredPushChannel == true)
            #expect(try await hub.store.installation(id: "fine")?.expiredPushChannel == false)
            // Expired channels are skipped by later sends.
            #expect(try await hub.send("again").counts == [.browser: [.success: 1]])
        }
    }

    @Test func throttlingIsRetriedHonouringRetryAfterInBothForms() async throws {
        try await WebPushHarness.with { hub in
            let subscription = try await hub.register("b1")
            hub.emulator.script(subscription.id, [.init(status: 429, retryAfter: "0")])
            #expect(try await hub.send("first").counts == [.browser: [.success: 1]])
            // Straight through the adapter, the wait is read from seconds and from an HTTP date.
            hub.emulator.script(subscription.id, [.init(status: 429, retryAfter: "7")])
            let seconds = await hub.deliver("x", to: subscription.pushChannel)
            #expect(seconds.outcome == .throttled && seconds.retryAfter == .seconds(7))
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            hub.emulator.script(subscription.id, [.init(status: 429, retryAfter: formatter.string(from: Date() + 120))])
            let dated = await hub.deliver("x", to: subscription.pushChannel)
            #expect(dated.outcome == .throttled)
            #expect(dated.retryAfter.map { $0 > .seconds(100) && $0 <= .seconds(120) } == true)
            #expect(hub.emulator.recorder.accepted.map(\.text) == ["first"])
        }
    }

    @Test func faultInjectedThrottlingSendsAnHTTPDate() async throws {
        try await WebPushHarness.with { hub in
            let subscription = try await hub.register("b1")
            hub.emulator.setFaults(FaultInjection(throttleRate: 1, retryAfterSeconds: 30))
            hub.emulator.setRetryAfterAsDate(true)
            let result = await hub.deliver("x", to: subscription.pushChannel)
            #expect(result.outcome == .throttled)
            #expect(result.retryAfter.map { $0 > .seconds(25) && $0 <= .seconds(30) } == true)
        }
    }

    @Test(arguments: [
        (400, Outcome.invalidNotificationFormat, 1), (413, .invalidNotificationSize, 1), (403, .wrongChannel, 1),
        (401, .invalidCredentials, 2), (500, .pnsUnavailable, 3), (503, .pnsUnavailable, 3), (418, .unknownError, 1),
    ])
    func answersMapToOutcomes(status: Int, outcome: Outcome, requests: Int) async throws {
        try await WebPushHarness.with { hub in
            let subscription = try await hub.register("b1")
            hub.emulator.script(subscription.id, Array(repeating: .init(status: status), count: 6))
            let summary = try await hub.send("x")
            #expect(summary.counts == [.browser: [outcome: 1]])
            // 5xx is retried up to the attempt limit, 401 once with a new token; the rest are final.
            #expect(hub.emulator.requestCount == requests)
        }
    }

    @Test func aPayloadTooLargeForTheServiceIs413() async throws {
        try await WebPushHarness.with(emulator: .init(maximumMessageBytes: 1000)) { hub in
            let subscription = try await hub.register("b1")
            let result = await hub.deliver(String(repeating: "x", count: 2000), to: subscription.pushChannel)
            #expect(result.outcome == .invalidNotificationSize)
            #expect(hub.emulator.rejectedCount == 1)
        }
    }

    @Test func anAdapterWithAnotherKeyIsRefusedByRestrictedSubscriptions() async throws {
        try await WebPushHarness.with { hub in
            let subscription = try await hub.register("b1")
            let other = try hub.makeAdapter { $0.vapidKeys = VAPIDKeys.generate() }
            #expect(await hub.deliver("x", to: subscription.pushChannel, with: other).outcome == .wrongChannel)
            try await other.shutdown()
        }
    }

    @Test func anExpiredVAPIDTokenIsRenewedOnceThenReportedAsInvalidCredentials() async throws {
        try await WebPushHarness.with { hub in
            let subscription = try await hub.register("b1")
            // A clock two days behind signs tokens the push service sees as expired.
            let clock = ManualWallClock(Date() - 2 * 86_400)
            let late = try hub.makeAdapter(clock: clock)
            let result = await hub.deliver("x", to: subscription.pushChannel, with: late)
            #expect(result.outcome == .invalidCredentials)
            #expect(await late.vapidTokenCount == 2)
            #expect(hub.emulator.recorder.violations.allSatisfy { $0.contains("401") && $0.contains("expired") })
            try await late.shutdown()
        }
    }

    @Test func anUnreachableServiceIsRetryable() async throws {
        try await WebPushHarness.with { hub in
            let subscription = try await hub.register("b1")
            let adapter = try hub.makeAdapter {
                $0.endpointPolicy = try! WebPushEndpointPolicy(allowedHosts: ["localhost:1", "localhost:\(hub.ports.service)"])
                $0.connectTimeout = .seconds(1)
            }
            let channel = PushChannel.object([
                "endpoint": .string("https://localhost:1/push/\(subscription.id)"), "p256dh": .string(subscription.p256dh),
                "auth": .string(subscription.auth),
            ])
            let result = await hub.deliver("x", to: channel, with: adapter)
            #expect(result.outcome == .pnsUnreachable && result.outcome.isRetryable)
            try await adapter.shutdown()
        }
    }

    @Test func badInputNeverLeavesTheHub() async throws {
        try await WebPushHarness.with { hub in
            let subscription = try await hub.register("b1")
            var offList = subscription.pushChannel
            if case .object(var object) = offList {
                object["endpoint"] = .string("https://internal.example/push/\(subscription.id)")
                offList = .object(object)
            }
            let cases: [(PushChannel, String, NotificationHeaders, Outcome)] = [
                (offList, "x", [:], .badChannel),
                (.handle(subscription.endpoint), "x", [:], .badChannel),  // no keys anywhere
                (.handle("https://127.0.0.1:\(hub.ports.service)/push/\(subscription.id)"), "x", [:], .badChannel),
                (subscription.pushChannel, String(repeating: "x", count: 3994), [:], .invalidNotificationSize),
                (subscription.pushChannel, "x", ["Urgency": "now"], .invalidNotificationFormat),
                (subscription.pushChannel, "x", ["TTL": "-5"], .invalidNotificationFormat),
            ]
            for (channel, body, headers, outcome) in cases {
                #expect(await hub.deliver(body, to: channel, headers: headers).outcome == outcome)
            }
            #expect(hub.emulator.requestCount == 0, "no request left the hub")
        }
    }

    @Test func aTemplateThatRendersTooLargeFailsWithoutARequest() async throws {
        try await WebPushHarness.with { hub in
            try await hub.register("b1", templates: ["big": InstallationTemplate(body: #"{"text":"$(text)"}"#)])
            let summary = try await hub.send(
                #"{"text":"\#(String(repeating: "y", count: 4000))"}"#, format: .template)
            #expect(summary.counts == [.browser: [.invalidNotificationSize: 1]])
            #expect(hub.emulator.requestCount == 0)
        }
    }
}
