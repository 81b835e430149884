import Foundation
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@testable import FCM

/// FCM takes one request per device: a batch's requests are spread over the adapter's HTTP/2 connections in chunks
/// of (requests in flight ÷ connections), so one large batch fills every connection instead of queueing on one.
@Suite struct FCMConnectionTests {
    static func deliveries(_ count: Int) -> [Delivery] {
        (0..<count).map { index in
            Delivery(
                notificationID: "n", installationID: "i\(index)", platform: .fcmv1,
                pushChannel: .handle("spread-token-\(String(format: "%04d", index))-" + String(repeating: "x", count: 40)),
                format: .fcmv1, payload: ByteBuffer(string: #"{"message":{"data":{"k":"v"}}}"#), headers: [:])
        }
    }

    @Test func aBatchIsSpreadOverTheConnectionsInChunksOfTheirStreams() async throws {
        try await FCMHarness.with { hub in
            let account = try FCMServiceAccount(json: FCMHarness.serviceAccountJSON(port: hub.ports.service))
            let adapter = try FCMAdapter(
                serviceAccount: account,
                configuration: FCMAdapter.Configuration(
                    endpoint: "https://127.0.0.1:\(hub.ports.service)", caCertificatePEM: FCMHarness.tls.caCertificatePEM,
                    maximumConcurrentRequests: 8, requestTimeout: .seconds(10), connections: 4),
                logger: FCMHarness.logger)
            #expect(adapter.pool.settings.maximumStreams == 2)
            // Two requests fit one connection's streams: one connection opens.
            let small = await adapter.deliver(Self.deliveries(2), context: .standalone())
            #expect(small.map(\.outcome) == [.success, .success])
            #expect(adapter.pool.connectionsOpened == 1)
            // Eight requests are four chunks of two, each on the next connection in turn.
            let large = await adapter.deliver(Self.deliveries(8), context: .standalone())
            #expect(large.allSatisfy { $0.outcome == .success })
            #expect(adapter.pool.connectionsOpened == 4)
            #expect(hub.emulator.recorder.acceptedCount == 10)
            try await adapter.shutdown()
        }
    }

    @Test func fewerRequestsInFlightThanConnectionsUseOnlyAsManyConnections() async throws {
        try await FCMHarness.with { hub in
            let account = try FCMServiceAccount(json: FCMHarness.serviceAccountJSON(port: hub.ports.service))
            let adapter = try FCMAdapter(
                serviceAccount: account,
                configuration: FCMAdapter.Configuration(
                    endpoint: "https://127.0.0.1:\(hub.ports.service)", caCertificatePEM: FCMHarness.tls.caCertificatePEM,
                    maximumConcurrentRequests: 3, requestTimeout: .seconds(10), connections: 32),
                logger: FCMHarness.logger)
            #expect(adapter.pool.settings.connections == 3)
            #expect(adapter.pool.settings.maximumStreams == 1)
            let results = await adapter.deliver(Self.deliveries(9), context: .standalone())
            #expect(results.allSatisfy { $0.outcome == .success })
            #expect(adapter.pool.connectionsOpened == 3)
            try await adapter.shutdown()
        }
    }

    @Test func anEndpointThatIsNotAnHTTPSURLIsRefused() throws {
        let account = try FCMServiceAccount(json: FCMHarness.serviceAccountJSON(port: 1))
        for endpoint in ["http://fcm.googleapis.com", "fcm.googleapis.com", "https://"] {
            #expect(throws: HubError.self, "\(endpoint)") {
                _ = try FCMAdapter(
                    serviceAccount: account, configuration: FCMAdapter.Configuration(endpoint: endpoint),
                    logger: FCMHarness.logger)
            }
        }
    }
}
