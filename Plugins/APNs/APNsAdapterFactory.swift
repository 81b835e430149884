import AdapterKit
import Crypto

/// Creates ``APNsAdapter``s from `type: apns` entries.
///
/// ```yaml
/// adapters:
///   - type: apns
///     endpoint: production              # sandbox, or https://host:port
///     teamId: ABCDE12345
///     keyId: KEY1234567
///     privateKey: {file: keys/AuthKey_KEY1234567.p8}
///     topic: com.example.app            # default bundle id
///     topics: [com.example.otherapp]    # more apps of the same team, chosen per send with apns-topic
///     connections: 4
///     maximumStreams: 1000
/// ```
public enum APNsAdapterFactory: PlatformAdapterFactory {
    /// `apns`.
    public static let type = "apns"

    /// The registration descriptions ``APNsAdapter`` declares.
    public static var registrationFormats: [RegistrationFormat] { APNsAdapter.descriptor.registrationFormats }

    /// Reads the settings (the `.p8` key's contents included), recording every problem; writes and opens nothing.
    public static func settings(from node: ConfigurationNode) -> APNsSettings? {
        let problemsBefore = node.problems.count
        let endpointText = node.string("endpoint", default: "production")
        let endpoint = APNsSettings.endpoint(endpointText)
        if endpoint == nil {
            node.child("endpoint").report("endpoint must be production, sandbox or an https://host[:port] URL")
        }
        let caPEM = node.caCertificatePEM()
        let teamID = node.string("teamId", required: true)
        let keyID = node.string("keyId", required: true)
        for (key, value) in [("teamId", teamID), ("keyId", keyID)] {
            if let value, value.isEmpty || !value.allSatisfy({ $0.isLetter || $0.isNumber }) {
                node.child(key).report("\(key) must be letters and digits (10 characters at Apple)")
            }
        }
        let privateKey = node.secret("privateKey")
        if let privateKey, (try? P256.Signing.PrivateKey(pemRepresentation: privateKey)) == nil {
            node.child("privateKey").report("privateKey is not a PKCS#8 PEM P-256 key (an APNs .p8 file)")
        }
        let topic = node.string("topic", required: true)
        let topics = node.strings("topics")
        let connections = node.integer("connections", default: 4, in: 1...64)
        let maximumStreams = node.integer("maximumStreams", default: 1000, in: 1...10_000)
        let requestTimeout = node.seconds("requestTimeoutSeconds", default: 30, in: 0.1...600)
        let connectTimeout = node.seconds("connectTimeoutSeconds", default: 10, in: 0.1...120)
        let pingInterval = node.seconds("pingIntervalSeconds", default: 60, in: 1...3600)
        let pingTimeout = node.seconds("pingTimeoutSeconds", default: 20, in: 1...600)
        let refresh = node.seconds("tokenRefreshSeconds", default: 3000, in: 1200...3540)
        let neverIndex = node.bool("neverIndexSensitiveHeaders", default: true)
        guard let endpoint, let teamID, let keyID, let privateKey, let topic, node.problems.count == problemsBefore else { return nil }
        return APNsSettings(
            host: endpoint.host, port: endpoint.port, caCertificatePEM: caPEM, teamID: teamID, keyID: keyID,
            privateKeyPEM: privateKey, topic: topic, additionalTopics: topics, connections: connections,
            maximumStreams: maximumStreams, requestTimeout: .milliseconds(Int(requestTimeout * 1000)),
            connectTimeout: .milliseconds(Int(connectTimeout * 1000)), pingInterval: .milliseconds(Int(pingInterval * 1000)),
            pingTimeout: .milliseconds(Int(pingTimeout * 1000)),
            tokenRefreshInterval: refresh, neverIndexSensitiveHeaders: neverIndex)
    }

    /// Makes the adapter (not started; connections open on first delivery).
    public static func makeAdapter(settings: APNsSettings, context: AdapterContext) throws(HubError) -> any PlatformAdapter {
        do {
            return try APNsAdapter(configuration: settings, logger: context.logger)
        } catch {
            throw HubError(.invalidConfiguration, error.message)
        }
    }
}

