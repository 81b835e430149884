import Crypto
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@testable import APNs

@Suite struct APNsConnectionTests {
    static let once = APNsErrorMappingTests.once

    @Test func theProviderTokenIsReusedThenRenewedBeforeItIsAnHourOld() async throws {
        let clock = ManualWallClock()
        try await APNsHarness.with(tokenMinimumRefresh: 1200, connections: 1, clock: clock) { (hub) async throws in
            let token = APNsHarness.deviceToken(1)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            clock.advance(by: 600)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            clock.advance(by: 2401)  // 50 minutes after the first token
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            let tokens = hub.emulator.received.map(\.providerToken)
            #expect(tokens.count == 3)
            #expect(tokens[0] == tokens[1])
            #expect(tokens[1] != tokens[2])
            let first = try APNsHarness.decodeJWT(tokens[0]).claims["iat"]
            let renewed = try APNsHarness.decodeJWT(tokens[2]).claims["iat"]
            #expect(first == .number(clock.now().timeIntervalSince1970 - 3001))
            #expect(renewed == .number(clock.now().timeIntervalSince1970))
            #expect(hub.emulator.violations.isEmpty)
        }
    }

    @Test func anExpiredProviderTokenIsRemintedOnceAndRetried() async throws {
        let clock = ManualWallClock()
        // The emulator expires tokens after 10 minutes, before the adapter would renew.
        try await APNsHarness.with(tokenMaximumAge: 600, tokenMinimumRefresh: 300, connections: 1, clock: clock) { (hub) async throws in
            let token = APNsHarness.deviceToken(2)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            clock.advance(by: 700)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            #expect(hub.emulator.violations.count == 1)
            #expect(hub.emulator.violations.first?.hasPrefix("ExpiredProviderToken:") == true)
            let tokens = hub.emulator.received.map(\.providerToken)
            #expect(tokens.count == 2 && tokens[0] != tokens[1])
        }
    }

    @Test func changingTheTokenTooOftenIsThrottled() async throws {
        let clock = ManualWallClock()
        try await APNsHarness.with(
            delivery: Self.once, tokenMaximumAge: 600, tokenMinimumRefresh: 1200, connections: 1, clock: clock
        ) { (hub) async throws in
            let token = APNsHarness.deviceToken(3)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            clock.advance(by: 700)
            // Expired → renewed → the connection's token changed after 700 s < 20 min.
            #expect(try await hub.sendDirect(to: [token]).counts == [.apns: [.throttled: 1]])
            #expect(hub.emulator.violations.map { $0.prefix { $0 != ":" } } == ["ExpiredProviderToken", "TooManyProviderTokenUpdates"])
        }
    }

    @Test func theStreamLimitStartsAtOneAndIsRaisedAfterAuthentication() async throws {
        let wide = DeliveryConfiguration(
            pageSize: 1000, batchSize: 400, concurrency: 1, abandonAfterSeconds: 30, maximumAttempts: 1,
            initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.02)
        try await APNsHarness.with(delivery: wide, connections: 1) { (hub) async throws in
            hub.emulator.faults = FaultInjection(latency: .milliseconds(20))
            let tokens = (0..<400).map { APNsHarness.deviceToken(1000 + $0) }
            let summary = try await hub.sendDirect(to: tokens)
            #expect(summary.counts == [.apns: [.success: 400]])
            // An answer is held back for at least the latency.
            hub.emulator.faults = FaultInjection(latency: .milliseconds(300))
            let started = ContinuousClock.now
            #expect(try await hub.sendDirect(to: [APNsHarness.deviceToken(1400)]).counts == [.apns: [.success: 1]])
            #expect(ContinuousClock.now - started >= .milliseconds(300))
            hub.emulator.faults = FaultInjection(latency: .milliseconds(20))
            #expect(hub.adapter.remoteStreamLimits == [1000])
            // Before the raise one stream at a time; after it, many at once.
            #expect(hub.emulator.peakConcurrentStreams > 1)
            #expect(hub.emulator.violations.isEmpty)
        }
        try await APNsHarness.with(delivery: wide, maximumStreams: 1, connections: 1) { (hub) async throws in
            // One stream at a time: the last request waits for all before it, inside its request timeout even on
            // a loaded machine.
            let tokens = (0..<20).map { APNsHarness.deviceToken(2000 + $0) }
            #expect(try await hub.sendDirect(to: tokens).counts == [.apns: [.success: 20]])
            #expect(hub.adapter.remoteStreamLimits == [1])
            #expect(hub.emulator.peakConcurrentStreams == 1)
        }
    }

    @Test func goAwayAndLostConnectionsAreReplaced() async throws {
        try await APNsHarness.with(connections: 1) { (hub) async throws in
            let token = APNsHarness.deviceToken(5)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            #expect(hub.adapter.connectionsOpened == 1)
            hub.emulator.goAway()
            try await APNsHarness.eventually { hub.emulator.openConnections == 0 }
            #expect(hub.emulator.openConnections == 0)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            #expect(hub.adapter.connectionsOpened == 2)

            hub.emulator.dropConnections()
            try await APNsHarness.eventually { hub.emulator.openConnections == 0 }
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            #expect(hub.adapter.connectionsOpened == 3)
            #expect(hub.emulator.acceptedCount == 3)
        }
    }

    @Test func keepAlivePingsAreAnsweredAndKeepTheConnection() async throws {
        // Whether an unanswered PING closes the connection is decided in APNsKeepAliveTests on a clock the test
        // moves; here the emulator answers real PINGs and the connection stays.
        try await APNsHarness.with(connections: 1, pingInterval: .milliseconds(50), pingTimeout: .seconds(20)) {
            (hub) async throws in
            let token = APNsHarness.deviceToken(8)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            try await APNsHarness.eventually { hub.adapter.pingsAcknowledged >= 5 }
            #expect(hub.adapter.pingsAcknowledged >= 5)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            #expect(hub.adapter.connectionsOpened == 1)
            #expect(hub.emulator.connectionsAccepted == 1)
        }
    }

    @Test func aDroppedConnectionMidRequestIsRetryable() async throws {
        try await APNsHarness.with(delivery: Self.once, connections: 1) { (hub) async throws in
            let token = APNsHarness.deviceToken(6)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            hub.emulator.faults = FaultInjection(dropConnectionRate: 1)
            #expect(try await hub.sendDirect(to: [token]).counts == [.apns: [.pnsUnreachable: 1]])
            hub.emulator.faults = .none
            #expect(try await hub.sendDirect(to: [token]).counts == [.apns: [.success: 1]])
        }
        // Requests APNs did not process (refused or above GOAWAY's last stream) are resent at once over a new
        // connection, without waiting for the dispatcher's retry (only one attempt is allowed here).
        try await APNsHarness.with(delivery: Self.once, connections: 1) { (hub) async throws in
            let token = APNsHarness.deviceToken(7)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            for _ in 0..<3 {
                hub.emulator.goAway()
                #expect(try await hub.sendDirect(to: (0..<20).map { APNsHarness.deviceToken(700 + $0) }).counts == [.apns: [.success: 20]])
            }
        }
    }

    @Test func unreachableEndpointsAreRetryableOutcomes() async throws {
        let logger = Logger.forTest("apns-test")
        let adapter = try APNsAdapter(
            configuration: APNsSettings(
                host: "127.0.0.1", port: 1, caCertificatePEM: APNsHarness.tls.caCertificatePEM, teamID: APNsHarness.teamID,
                keyID: APNsHarness.keyID, privateKeyPEM: APNsHarness.signingKey.pemRepresentation, topic: APNsHarness.topic),
            logger: logger)
        let results = await adapter.deliver([
            Delivery(
                notificationID: "n", installationID: nil, platform: .apns, pushChannel: .handle(APNsHarness.deviceToken(1)),
                format: .apple, payload: .init(string: #"{"aps":{}}"#), headers: [:])
        ])
        #expect(results.map(\.outcome) == [.pnsUnreachable])
        await adapter.shutdown()
    }

    /// More request bytes than the connection window granted at start (16 MiB) go through one connection: the
    /// emulator must give consumed bytes back to the window, or the connection stalls until requests time out.
    @Test func oneConnectionCarriesMoreThanItsInitialWindow() async throws {
        // One batch of 100 at a time, one attempt: no request waits long enough to time out on a loaded machine, so a
        // timeout (and the reconnect after it) can only come from a stalled connection.
        let steady = DeliveryConfiguration(
            pageSize: 1000, batchSize: 100, concurrency: 1, abandonAfterSeconds: 600, maximumAttempts: 1,
            initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.02)
        try await APNsHarness.with(delivery: steady, connections: 1) { (hub) async throws in
            let alert = String(repeating: "x", count: 3500)
            let tokens = (0..<5200).map { APNsHarness.deviceToken(100_000 + $0) }
            let summary = try await hub.sendDirect(#"{"aps":{"alert":"\#(alert)"}}"#, to: tokens)
            #expect(summary.count(of: .success) == tokens.count)
            #expect(hub.emulator.acceptedCount == tokens.count)
            #expect(hub.emulator.connectionsAccepted == 1, "the connection never stalled into a timeout and a reconnect")
        }
    }
}
