import APNs
import Crypto
import Foundation
import Logging
import NIOCore
import NotificationHub
import PushEmulator

/// One Live Activity update to a tag of `devices` subscribers, sent two ways through the Dispatcher and the APNs
/// adapter to the emulator in process: as one broadcast on the tag's channel (the subscribers are at APNs: the hub
/// holds one row), and per token to `devices` activity tokens (the hub holds a row each). Prints requests sent and
/// time to delivered for each.
///
///   swift run -c release APNsDelivery --broadcast --devices 100000
func runBroadcastComparison(
    devices: Int, rounds: Int, connections: Int, streams: Int, batchSize: Int, concurrency: Int,
    signingKey: P256.Signing.PrivateKey, tls: EmulatorTLS, logger: Logger
) async throws {
    let emulator = APNsEmulator(
        configuration: APNsEmulatorConfiguration(
            port: 0, teamID: "TEAM123456", keyID: "KEY1234567", publicKey: signingKey.publicKey,
            topics: ["com.example.app"], recordCapacity: 0, managementPort: 0),
        tls: tls, logger: logger)
    let port = try await emulator.start()
    let adapter = try APNsAdapter(
        configuration: APNsSettings(
            host: "127.0.0.1", port: port, caCertificatePEM: tls.caCertificatePEM, teamID: "TEAM123456", keyID: "KEY1234567",
            privateKeyPEM: signingKey.pemRepresentation, topic: "com.example.app", connections: connections, maximumStreams: streams,
            managementHost: "127.0.0.1", managementPort: emulator.managementPort(of: .production) ?? 0),
        logger: logger)
    let store = try await SQLInstallationStore.open(storage: .memory, logger: logger)
    let channel = try await adapter.createChannel(BroadcastChannelOptions())
    try await store.upsert(contentsOf: [
        Installation(
            installationID: InstallationService.broadcastChannelRowID(platform: .apnsBroadcast, tag: "match"), platform: .apnsBroadcast, pushChannel: .handle(channel.id), tags: ["match"])
    ])
    for chunk in stride(from: 0, to: devices, by: 5000) {
        try await store.upsert(
            contentsOf: (chunk..<min(chunk + 5000, devices)).map {
                Installation(
                    installationID: "a\($0)", platform: .apnsActivity,
                    pushChannel: .handle(String(format: "%016x", $0) + String(repeating: "cd", count: 24)), tags: ["tokens"])
            })
    }
    let dispatcher = Dispatcher(
        store: store, adapters: try AdapterSet([adapter]),
        configuration: DeliveryConfiguration(pageSize: 1000, batchSize: batchSize, concurrency: concurrency, maximumAttempts: 3),
        logger: logger)
    let update = #"{"aps":{"event":"update","timestamp":1767225600,"content-state":{"home":1,"away":0}}}"#
    func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
    for round in 1...rounds {
        let broadcastsBefore = emulator.broadcastRequestCount(in: .production)
        let started = ContinuousClock.now
        let broadcast = try await dispatcher.dispatch(
            Notification(format: .liveActivity, body: update, headers: ["apns-priority": "5"], audience: .tags(try TagExpression(parsing: "match"))))
        let broadcastSeconds = seconds(since: started)
        let broadcastRequests = emulator.broadcastRequestCount(in: .production) - broadcastsBefore

        let requestsBefore = emulator.requestCount(in: .production)
        let perTokenStarted = ContinuousClock.now
        let perToken = try await dispatcher.dispatch(
            Notification(
                format: .liveActivity, body: update, headers: ["apns-priority": "5"],
                audience: .tags(try TagExpression(parsing: "tokens"))))
        let perTokenSeconds = seconds(since: perTokenStarted)
        let perTokenRequests = emulator.requestCount(in: .production) - requestsBefore
        print(
            String(
                format: "round %d: broadcast to a %d-subscriber tag: %d request(s), %d success, delivered in %.4f s | per token: %d requests, %d successes, %.3f s = %.0f requests/s",
                round, devices, broadcastRequests, broadcast.count(of: .success), broadcastSeconds, perTokenRequests,
                perToken.count(of: .success), perTokenSeconds, Double(perTokenRequests) / perTokenSeconds))
    }
    print("emulator broadcasts \(emulator.broadcastCount), device pushes \(emulator.acceptedCount), violations \(emulator.violations.count)")
    try await store.database.close()
    await adapter.shutdown()
    await emulator.stop()
}
