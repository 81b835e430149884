import Foundation
import NIOCore
import NotificationHub
import PushEmulator
import Testing
import WNS

@Suite struct WNSTokenTests {
    @Test func concurrentSendsShareOneTokenRequest() async throws {
        var delivery = WNSHarness.fast
        delivery.concurrency = 8
        try await WNSHarness.with(delivery: delivery) { hub in
            for index in 0..<200 { try await hub.register("d\(index)") }
            let summary = try await hub.send(Payloads.raw, headers: ["X-WNS-Type": "wns/raw"])
            #expect(summary.counts == [.wns: [.success: 200]])
            #expect(await hub.adapter.tokenRequestCount == 1)
            #expect(hub.emulator.tokenRequestCount == 1)
            // Channel requests share the pool: the harness allows 8 connections per host; the token request has
            // its own connection.
            #expect(hub.emulator.peakOpenConnections <= 8 + 1)
            #expect(hub.emulator.connectionCount >= 1)
        }
    }

    @Test func aTokenRejectedAsExpiredIsRenewedOnceForManySends() async throws {
        try await WNSHarness.with { hub in
            for index in 0..<60 { try await hub.register("d\(index)") }
            #expect(try await hub.send(Payloads.toast).count(of: .success) == 60)
            hub.emulator.expireAllTokens()
            let summary = try await hub.send(Payloads.toast)
            #expect(summary.counts == [.wns: [.success: 60]])
            #expect(hub.emulator.tokenRequestCount == 2)
            #expect(await hub.adapter.tokenRequestCount == 2)
            #expect(hub.emulator.recorder.violations.isEmpty)
        }
    }

    @Test func tokensAreRenewedBeforeTheyExpire() async throws {
        let clock = ManualWallClock(Date())
        try await WNSHarness.with(clock: clock) { hub in
            hub.emulator.setTokenLifetime(.seconds(7200))
            // expires_in may arrive as a string.
            hub.emulator.setExpiresInAsString(true)
            for index in 0..<10 { try await hub.register("d\(index)") }
            #expect(try await hub.send(Payloads.toast).count(of: .success) == 10)
            #expect(await hub.adapter.tokenRequestCount == 1)
            // Within the lifetime (7200 s, renewed 300 s early): the cached token is used.
            clock.advance(by: 6000)
            #expect(try await hub.send(Payloads.toast).count(of: .success) == 10)
            #expect(await hub.adapter.tokenRequestCount == 1)
            // Close to expiry: one new token for all sends.
            clock.advance(by: 1000)
            #expect(try await hub.send(Payloads.toast).count(of: .success) == 10)
            #expect(await hub.adapter.tokenRequestCount == 2)
            #expect(hub.emulator.tokenRequestCount == 2)
        }
    }

    @Test func tokensPastTheEmulatorsShortLifetimeAreRenewedOn401() async throws {
        // The adapter's clock stands still, so only the emulator knows its tokens expired.
        let clock = ManualWallClock(Date())
        try await WNSHarness.with(clock: clock) { hub in
            for index in 0..<20 { try await hub.register("d\(index)") }
            #expect(try await hub.send(Payloads.toast).count(of: .success) == 20)
            hub.emulator.expireAllTokens()
            #expect(try await hub.send(Payloads.toast).count(of: .success) == 20)
            #expect(hub.emulator.tokenRequestCount == 2)
            #expect(await hub.adapter.tokenRequestCount == 2)
        }
    }

    @Test func aSecond401IsInvalidCredentials() async throws {
        try await WNSHarness.with { hub in
            hub.emulator.createChannel(id: "c")
            hub.emulator.script([.init(status: 401), .init(status: 401)])
            let result = await hub.deliver(Payloads.toast, channel: "c")
            #expect(result.outcome == .invalidCredentials)
            #expect(hub.emulator.tokenRequestCount == 2)
            hub.emulator.script([.init(status: 401)])
            #expect(await hub.deliver(Payloads.toast, channel: "c") == .success)
            #expect(hub.emulator.tokenRequestCount == 3)
        }
    }

    @Test func wrongCredentialsAreInvalidCredentials() async throws {
        try await WNSHarness.with(adapterSettings: { $0.clientSecret = "wrong-secret" }) { hub in
            for index in 0..<5 { try await hub.register("d\(index)") }
            let summary = try await hub.send(Payloads.toast)
            #expect(summary.counts == [.wns: [.invalidCredentials: 5]])
            #expect(hub.emulator.recorder.acceptedCount == 0)
            #expect(hub.emulator.recorder.violations.contains { $0.contains("Invalid client") })
            let direct = await hub.deliver(Payloads.toast, channel: "ch-d0")
            #expect(direct.reason?.contains("invalid_client") == true)
            #expect(direct.reason?.contains("wrong-secret") == false)
        }
    }

    @Test func anUnreachableTokenEndpointIsPnsUnreachable() async throws {
        try await WNSHarness.with(adapterSettings: { $0.tokenEndpoint = "https://127.0.0.1:1/accesstoken.srf"; $0.requestTimeout = .seconds(2) }) { hub in
            hub.emulator.createChannel(id: "c")
            #expect(await hub.deliver(Payloads.toast, channel: "c").outcome == .pnsUnreachable)
        }
    }
}
