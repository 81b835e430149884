import Crypto
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@testable import APNs

/// An APNs emulator with channel management listeners (production, and with `bothEnvironments` sandbox too) on
/// 127.0.0.1:0, and the settings of an adapter pointed at its push and management listeners.
struct APNsBroadcastHarness {
    let emulator: APNsEmulator
    let settings: APNsSettings

    static let logger = Logger.forTest("apns-broadcast-test")
    static let update = #"{"aps":{"event":"update","timestamp":1700000000,"content-state":{"score":"1-0"}}}"#

    static func with<T: Sendable>(
        bothEnvironments: Bool = false, first: APNsEnvironment = .production, management: Bool = true,
        maximumChannels: Int = 10_000, _ body: (APNsBroadcastHarness) async throws -> T
    ) async throws -> T {
        let emulator = APNsEmulator(
            configuration: APNsEmulatorConfiguration(
                port: 0, teamID: APNsHarness.teamID, keyID: APNsHarness.keyID, publicKey: APNsHarness.signingKey.publicKey,
                topics: [APNsHarness.topic], tokenMinimumRefreshInterval: 0, sandboxPort: bothEnvironments ? 0 : nil,
                managementPort: 0, sandboxManagementPort: bothEnvironments ? 0 : nil, maximumChannelsPerApp: maximumChannels),
            tls: APNsHarness.tls, logger: logger)
        try await emulator.start()
        do {
            let settings = try settings(for: emulator, bothEnvironments: bothEnvironments, first: first, management: management)
            let result = try await body(APNsBroadcastHarness(emulator: emulator, settings: settings))
            await emulator.stop()
            return result
        } catch {
            await emulator.stop()
            throw error
        }
    }

    static func settings(
        for emulator: APNsEmulator, bothEnvironments: Bool, first: APNsEnvironment, management: Bool
    ) throws -> APNsSettings {
        let key = APNsHarness.signingKey.pemRepresentation
        let push = try #require(emulator.port(of: first == .production || !bothEnvironments ? .production : .sandbox))
        let manage = try #require(emulator.managementPort(of: first == .production || !bothEnvironments ? .production : .sandbox))
        var other: APNsEnvironmentSettings?
        if bothEnvironments {
            other = APNsEnvironmentSettings(
                environment: first.other, host: "127.0.0.1", port: try #require(emulator.port(of: first.other == .production ? .production : .sandbox)),
                keyID: APNsHarness.keyID, privateKeyPEM: key, managementHost: management ? "127.0.0.1" : nil,
                managementPort: try #require(emulator.managementPort(of: first.other == .production ? .production : .sandbox)))
        }
        return APNsSettings(
            host: "127.0.0.1", port: push, caCertificatePEM: APNsHarness.tls.caCertificatePEM, teamID: APNsHarness.teamID,
            keyID: APNsHarness.keyID, privateKeyPEM: key, topic: APNsHarness.topic, connections: 1, requestTimeout: .seconds(20),
            environment: bothEnvironments ? first : .production, otherEnvironment: other, rememberedDevices: 1000,
            managementHost: management ? "127.0.0.1" : nil, managementPort: manage)
    }

    /// An adapter made from ``settings``; shut down after `body`.
    func withAdapter<T: Sendable>(_ body: (APNsAdapter) async throws -> T) async throws -> T {
        let adapter = try APNsAdapter(configuration: settings, logger: Self.logger)
        do {
            let result = try await body(adapter)
            await adapter.shutdown()
            return result
        } catch {
            await adapter.shutdown()
            throw error
        }
    }

    /// A delivery of a Live Activity update to a channel row.
    static func delivery(channelID: String, body: String = update, headers: NotificationHeaders = [:]) -> Delivery {
        Delivery(
            notificationID: "n1", installationID: "apnsbroadcast/match:1", platform: .apnsBroadcast,
            pushChannel: .handle(channelID), format: .liveActivity, payload: .init(string: body), headers: headers)
    }
}
