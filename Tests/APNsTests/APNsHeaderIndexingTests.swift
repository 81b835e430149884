import AdapterKit
import Crypto
import HubTestSupport
import Logging
import NIOCore
import NIOHPACK
import NotificationHub
import PushEmulator
import Testing

@testable import APNs

/// How request headers enter the connection's HPACK table.
@Suite struct APNsHeaderIndexingTests {
    func adapter(neverIndexSensitiveHeaders: Bool) throws -> APNsAdapter {
        var configuration = APNsSettings(
            host: "127.0.0.1", port: 1, caCertificatePEM: APNsHarness.tls.caCertificatePEM, teamID: APNsHarness.teamID,
            keyID: APNsHarness.keyID, privateKeyPEM: APNsHarness.signingKey.pemRepresentation, topic: APNsHarness.topic)
        configuration.neverIndexSensitiveHeaders = neverIndexSensitiveHeaders
        return try APNsAdapter(configuration: configuration, logger: Logger.forTest("test"))
    }

    /// Values of one request only (the device's path, the apns-id) are never indexed: they would evict the entries
    /// every request reuses. The provider token is indexed only when sensitive headers may be.
    @Test(arguments: [true, false])
    func valuesOfOneRequestStayOutOfTheTable(neverIndexSensitiveHeaders: Bool) async throws {
        let adapter = try adapter(neverIndexSensitiveHeaders: neverIndexSensitiveHeaders)
        let delivery = Delivery(
            notificationID: "n", installationID: "i", platform: .apns, pushChannel: .handle(APNsHarness.deviceToken(7)),
            format: .apple, payload: ByteBuffer(string: #"{"aps":{"alert":"hi"}}"#), headers: [:])
        let payload = try #require(APNsAdapter.PayloadShape(delivery.payload))
        guard case .success(let request) = adapter.request(for: delivery, shape: payload, authorization: "bearer x") else {
            Issue.record("the delivery was refused")
            return
        }
        var indexing: [String: HPACKIndexing] = [:]
        for (name, _, how) in request.headers { indexing[name] = how }
        #expect(indexing["apns-id"] == .nonIndexable)
        #expect(indexing[":path"] == (neverIndexSensitiveHeaders ? .neverIndexed : .nonIndexable))
        #expect(indexing["authorization"] == (neverIndexSensitiveHeaders ? .neverIndexed : .indexable))
        #expect(indexing["apns-topic"] == .indexable && indexing[":authority"] == .indexable)
        await adapter.shutdown()
    }
}
