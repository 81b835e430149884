import Foundation
import NIOCore
import NotificationHub
import PushEmulator
import Testing
import WNS

@Suite struct WNSDeliveryTests {
    @Test func rawToastTileAndBadgeReachTheirChannels() async throws {
        try await WNSHarness.with { hub in
            for index in 0..<6 { try await hub.register("d\(index)", tags: index < 3 ? ["news"] : ["sports"]) }

            let raw = try await hub.send(Payloads.raw, headers: ["X-WNS-Type": "wns/raw", "X-WNS-Cache-Policy": "no-cache"], to: "news")
            #expect(raw.counts == [.wns: [.success: 3]])
            let toast = try await hub.send(Payloads.toast, headers: ["X-WNS-TTL": "60", "X-WNS-RequestForStatus": "true"], to: "sports")
            #expect(toast.counts == [.wns: [.success: 3]])
            let tile = try await hub.send(
                Payloads.tile, headers: ["X-WNS-Type": "wns/tile", "X-WNS-Tag": "score", "X-WNS-Group": "games"], to: "news")
            #expect(tile.count(of: .success) == 3)
            let badge = try await hub.send(Payloads.badge, to: "sports")
            #expect(badge.count(of: .success) == 3)

            let received = hub.emulator.recorder.accepted
            #expect(received.count == 12)
            let byType = Dictionary(grouping: received, by: \.type)
            #expect(Set(byType["wns/raw"]?.map(\.channel) ?? []) == ["ch-d0", "ch-d1", "ch-d2"])
            #expect(byType["wns/raw"]?.allSatisfy { $0.contentType == "application/octet-stream" && $0.payload == Payloads.raw } == true)
            #expect(byType["wns/raw"]?.first?.headers["X-WNS-Cache-Policy"] == "no-cache")
            // Without X-WNS-Type, the type follows the XML root element.
            #expect(byType["wns/toast"]?.allSatisfy { $0.contentType == "text/xml" && $0.payload == Payloads.toast } == true)
            #expect(byType["wns/toast"]?.first?.headers["X-WNS-TTL"] == "60")
            #expect(byType["wns/toast"]?.first?.headers["X-WNS-RequestForStatus"] == "true")
            #expect(byType["wns/tile"]?.first?.headers["X-WNS-Tag"] == "score")
            #expect(byType["wns/tile"]?.first?.headers["X-WNS-Group"] == "games")
            #expect(Set(byType["wns/badge"]?.map(\.channel) ?? []) == ["ch-d3", "ch-d4", "ch-d5"])
            #expect(hub.emulator.recorder.violations.isEmpty)
            #expect(await hub.adapter.tokenRequestCount == 1)
            #expect(hub.emulator.tokenRequestCount == 1)
        }
    }

    @Test func templateSendsRenderBodiesAndHeadersPerInstallation() async throws {
        try await WNSHarness.with { hub in
            let toastTemplate = InstallationTemplate(
                body: #"<toast><visual><binding template="ToastGeneric"><text>$(message)</text></binding></visual></toast>"#,
                headers: ["X-WNS-Type": "wns/toast", "X-WNS-Tag": "$(tag)"])
            let rawTemplate = InstallationTemplate(body: #"{"m":"$(message)"}"#, headers: ["X-WNS-Type": "$(rawType)"])
            try await hub.register("alice", templates: ["toast": toastTemplate])
            try await hub.register("bob", templates: ["raw": rawTemplate])
            // A rendered header that is not a WNS type is caught per delivery, before anything is sent.
            try await hub.register(
                "carol", templates: ["bad": InstallationTemplate(body: #"{"m":1}"#, headers: ["X-WNS-Type": "$(badType)"])])
            // A tile body sent as a toast: the rendered root element does not match X-WNS-Type.
            try await hub.register(
                "dave",
                templates: ["mismatch": InstallationTemplate(body: "<tile><visual/></tile>", headers: ["X-WNS-Type": "wns/toast"])])

            let properties = #"{"message":"Goal <3 & more","tag":"t1","rawType":"wns/raw","badType":"wns/bogus"}"#
            let summary = try await hub.dispatcher.dispatch(
                Notification(format: .template, body: properties, audience: .all))
            #expect(summary.counts == [.wns: [.success: 2, .invalidNotificationFormat: 2]])

            let received = Dictionary(uniqueKeysWithValues: hub.emulator.recorder.accepted.map { ($0.channel, $0) })
            #expect(received.count == 2)
            let alice = try #require(received["ch-alice"])
            #expect(alice.type == "wns/toast")
            #expect(alice.headers["X-WNS-Tag"] == "t1")
            #expect(alice.payload.contains("<text>Goal &lt;3 &amp; more</text>"))
            let bob = try #require(received["ch-bob"])
            #expect(bob.type == "wns/raw")
            #expect(bob.contentType == "application/octet-stream")
            #expect(bob.payload == #"{"m":"Goal <3 & more"}"#)
            #expect(hub.emulator.recorder.violations.isEmpty)
        }
    }

    @Test func expiredChannelsAreMarkedAndSkipped() async throws {
        try await WNSHarness.with { hub in
            for index in 0..<4 { try await hub.register("d\(index)") }
            hub.emulator.setChannel("ch-d1", .expired)
            let first = try await hub.send(Payloads.toast)
            #expect(first.counts == [.wns: [.success: 3, .expiredChannel: 1]])
            #expect(try await hub.store.installation(id: "d1")?.expiredPushChannel == true)
            #expect(try await hub.store.installation(id: "d0")?.expiredPushChannel == false)
            let second = try await hub.send(Payloads.toast)
            #expect(second.counts == [.wns: [.success: 3]])
        }
    }

    @Test func expiredChannelsAreDeletedWhenConfigured() async throws {
        var delivery = WNSHarness.fast
        delivery.expiredChannelPolicy = .delete
        try await WNSHarness.with(delivery: delivery) { hub in
            try await hub.register("keep")
            try await hub.register("gone")
            hub.emulator.setChannel("ch-gone", .expired)
            let summary = try await hub.send(Payloads.raw, headers: ["X-WNS-Type": "wns/raw"])
            #expect(summary.count(of: .expiredChannel) == 1)
            #expect(try await hub.store.installation(id: "gone") == nil)
            #expect(try await hub.store.installation(id: "keep") != nil)
        }
    }

    @Test(arguments: [
        (WNSEmulator.ChannelState.expired, Outcome.expiredChannel),
        (.otherApp, .wrongChannel),
        (.unknown, .badChannel),
        (.dropped, .dropped),
        (.throttled, .channelThrottled),
        (.active, .success),
    ])
    func channelStatesMapToOutcomes(state: WNSEmulator.ChannelState, outcome: Outcome) async throws {
        try await WNSHarness.with { hub in
            try await hub.register("d")
            hub.emulator.setChannel("ch-d", state)
            let summary = try await hub.send(Payloads.toast)
            #expect(summary.counts == [.wns: [outcome: 1]])
            let direct = await hub.deliver(Payloads.toast, channel: "ch-d")
            #expect(direct.outcome == outcome)
            if outcome != .success { #expect(direct.reason != nil) }
            if state == .expired { #expect(direct.reason == "The channel expired") }
            if state == .dropped { #expect(direct.reason == "dropped") }
        }
    }

    @Test(arguments: [
        (500, Outcome.pnsUnavailable),
        (503, .pnsUnavailable),
        (406, .throttled),
        (413, .invalidNotificationSize),
        (400, .invalidNotificationFormat),
        (404, .badChannel),
        (403, .wrongChannel),
        (410, .expiredChannel),
        (502, .unknownError),
    ])
    func statusCodesMapToOutcomes(status: Int, outcome: Outcome) async throws {
        try await WNSHarness.with { hub in
            hub.emulator.createChannel(id: "c")
            hub.emulator.script([.init(status: status, retryAfterSeconds: 7)])
            let result = await hub.deliver(Payloads.raw, headers: ["X-WNS-Type": "wns/raw"], channel: "c")
            #expect(result.outcome == outcome)
            #expect(result.reason == "Injected fault")
            #expect(result.retryAfter == (outcome.isRetryable ? .seconds(7) : nil))
            // The next request is not affected.
            let next = await hub.deliver(Payloads.raw, headers: ["X-WNS-Type": "wns/raw"], channel: "c")
            #expect(next == .success)
        }
    }

    @Test func retryableOutcomesAreRetriedByTheDispatcher() async throws {
        try await WNSHarness.with { hub in
            for index in 0..<3 { try await hub.register("d\(index)") }
            hub.emulator.script([.init(status: 503, retryAfterSeconds: 0), .init(status: 500)])
            let summary = try await hub.send(Payloads.badge)
            #expect(summary.counts == [.wns: [.success: 3]])
            #expect(hub.emulator.recorder.acceptedCount == 3)
        }
    }

    @Test func retryAfterIsReadAsAnHTTPDateToo() async throws {
        try await WNSHarness.with { hub in
            try await hub.register("d", channel: "ch-date")
            hub.emulator.script([.init(status: 406, retryAfterDate: Date() + 120)])
            let result = await hub.deliver(Payloads.toast, channel: "ch-date")
            #expect(result.outcome == .throttled)
            #expect(result.retryAfter.map { $0 > .seconds(100) && $0 <= .seconds(120) } == true)
        }
    }

    @Test func retryAfterIsHonoured() async throws {
        try await WNSHarness.with { hub in
            try await hub.register("d")
            hub.emulator.script([.init(status: 406, retryAfterSeconds: 1)])
            let started = ContinuousClock.now
            let summary = try await hub.send(Payloads.toast)
            let elapsed = ContinuousClock.now - started
            #expect(summary.counts == [.wns: [.success: 1]])
            // The backoff alone is at most 0.05 s here; the dispatcher waited for the 1 s WNS asked for.
            #expect(elapsed >= .seconds(1))
            hub.emulator.script([.init(status: 406, retryAfterSeconds: 1)])
            #expect(await hub.deliver(Payloads.toast, channel: "ch-d").retryAfter == .seconds(1))
        }
    }

    @Test func rateBasedFaultsAndLatency() async throws {
        try await WNSHarness.with { hub in
            hub.emulator.createChannel(id: "c")
            hub.emulator.recorder.faults = FaultInjection(throttleRate: 1, retryAfterSeconds: 3)
            let throttled = await hub.deliver(Payloads.toast, channel: "c")
            #expect(throttled.outcome == .throttled)
            #expect(throttled.retryAfter == .seconds(3))
            hub.emulator.recorder.faults = FaultInjection(unavailableRate: 1, retryAfterSeconds: 2)
            let unavailable = await hub.deliver(Payloads.toast, channel: "c")
            #expect(unavailable.outcome == .pnsUnavailable)
            #expect(unavailable.retryAfter == .seconds(2))
            hub.emulator.recorder.faults = FaultInjection(latency: .milliseconds(50))
            #expect(await hub.deliver(Payloads.toast, channel: "c") == .success)
            hub.emulator.recorder.faults = FaultInjection(dropConnectionRate: 1)
            #expect(await hub.deliver(Payloads.toast, channel: "c").outcome == .pnsUnreachable)
        }
    }

    @Test func unreachableHostsArePnsUnreachable() async throws {
        try await WNSHarness.with(adapterSettings: { $0.requestTimeout = .seconds(2) }) { hub in
            // Port 1 on loopback refuses connections.
            let delivery = Delivery(
                notificationID: "n", installationID: nil, platform: .wns,
                pushChannel: .handle("https://127.0.0.1:1/w/?token=x"), format: .windows,
                payload: ByteBuffer(string: Payloads.toast), headers: [:])
            let result = await hub.adapter.deliver([delivery])[0]
            #expect(result.outcome == .pnsUnreachable)
            #expect(result.reason?.contains("token=") == false)
        }
    }

    @Test func unknownChannelsAreBadChannelsUnlessTheEmulatorAcceptsThem() async throws {
        try await WNSHarness.with { hub in
            #expect(await hub.deliver(Payloads.badge, channel: "never-created").outcome == .badChannel)
        }
        try await WNSHarness.with(emulatorSettings: { $0.acceptUnknownChannels = true }) { hub in
            #expect(await hub.deliver(Payloads.badge, channel: "never-created") == .success)
            #expect(hub.emulator.recorder.accepted.map(\.channel) == ["never-created"])
        }
    }

    @Test func oversizedAndMalformedDeliveriesAreNotSent() async throws {
        try await WNSHarness.with { hub in
            hub.emulator.createChannel(id: "c")
            let big = "<toast>" + String(repeating: "x", count: 5000) + "</toast>"
            #expect(await hub.deliver(big, channel: "c").outcome == .invalidNotificationSize)
            #expect(await hub.deliver("<toast><visual>", channel: "c").outcome == .invalidNotificationFormat)
            #expect(await hub.deliver("x", headers: ["X-WNS-Type": "wns/other"], channel: "c").outcome == .invalidNotificationFormat)
            #expect(hub.emulator.recorder.acceptedCount == 0)
            #expect(hub.emulator.tokenRequestCount == 0)
        }
    }
}
