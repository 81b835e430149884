import AdapterKit
import Crypto
import Foundation

/// Settings of the APNs adapter (an `adapters:` entry with `type: apns`).
public struct APNsAdapterConfiguration: Sendable {
    /// The provider API's host.
    public var host: String
    /// The provider API's port.
    public var port: Int
    /// An extra CA to trust (PEM), for the emulator; `nil` trusts the system roots only.
    public var caCertificatePEM: String?
    /// The team id (`iss` of provider tokens).
    public var teamID: String
    /// The key id (`kid` of provider tokens).
    public var keyID: String
    /// The `.p8` signing key (PKCS#8 PEM). A secret.
    public var privateKeyPEM: String
    /// The default topic (the app's bundle id); push types add their suffix (`.voip`, `.complication`, …).
    public var topic: String
    /// Further bundle ids of the same team a send may choose with its `apns-topic` header.
    public var additionalTopics: [String]
    /// HTTP/2 connections kept open.
    public var connections: Int
    /// Streams per connection at most (the server's `SETTINGS_MAX_CONCURRENT_STREAMS` may lower it).
    public var maximumStreams: Int
    /// Deadline of one adapter call's requests.
    public var requestTimeout: Duration
    /// Deadline of opening a connection.
    public var connectTimeout: Duration
    /// Interval of keep-alive PINGs.
    public var pingInterval: Duration
    /// A PING not acknowledged within this time closes the connection (checked at each interval; time during which
    /// the connection's event loop was held up does not count).
    public var pingTimeout: Duration
    /// Age at which the provider token is renewed (between 20 and 59 minutes, as APNs requires).
    public var tokenRefreshInterval: TimeInterval
    /// Send `authorization` and `:path` as never-indexed HPACK literals, as Apple asks.
    public var neverIndexSensitiveHeaders: Bool
    /// The clock provider tokens are dated with.
    public var clock: any WallClock

    /// Creates a configuration.
    public init(
        host: String, port: Int = 443, caCertificatePEM: String? = nil, teamID: String, keyID: String,
        privateKeyPEM: String, topic: String, additionalTopics: [String] = [], connections: Int = 4,
        maximumStreams: Int = 1000, requestTimeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10),
        pingInterval: Duration = .seconds(60), pingTimeout: Duration = .seconds(20), tokenRefreshInterval: TimeInterval = 3000,
        neverIndexSensitiveHeaders: Bool = true, clock: any WallClock = SystemWallClock()
    ) {
        self.host = host
        self.port = port
        self.caCertificatePEM = caCertificatePEM
        self.teamID = teamID
        self.keyID = keyID
        self.privateKeyPEM = privateKeyPEM
        self.topic = topic
        self.additionalTopics = additionalTopics
        self.connections = connections
        self.maximumStreams = maximumStreams
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
        self.tokenRefreshInterval = tokenRefreshInterval
        self.neverIndexSensitiveHeaders = neverIndexSensitiveHeaders
        self.clock = clock
    }

    /// Parses `production`, `sandbox` or an `https://host[:port]` URL.
    public static func endpoint(_ text: String) -> (host: String, port: Int)? {
        switch text.lowercased() {
        case "production": return ("api.push.apple.com", 443)
        case "sandbox", "development": return ("api.sandbox.push.apple.com", 443)
        default:
            guard let url = URL(string: text), url.scheme?.lowercased() == "https", let host = url.host, !host.isEmpty else {
                return nil
            }
            return (host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), url.port ?? 443)
        }
    }
}

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
    public static let type = "apns"

    /// Reads the settings (the `.p8` key's contents included), recording every problem; writes and opens nothing.
    public static func settings(from node: ConfigurationNode) -> APNsAdapterConfiguration? {
        let problemsBefore = node.problems.count
        let endpointText = node.string("endpoint", default: "production")
        let endpoint = APNsAdapterConfiguration.endpoint(endpointText)
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
        return APNsAdapterConfiguration(
            host: endpoint.host, port: endpoint.port, caCertificatePEM: caPEM, teamID: teamID, keyID: keyID,
            privateKeyPEM: privateKey, topic: topic, additionalTopics: topics, connections: connections,
            maximumStreams: maximumStreams, requestTimeout: .milliseconds(Int(requestTimeout * 1000)),
            connectTimeout: .milliseconds(Int(connectTimeout * 1000)), pingInterval: .milliseconds(Int(pingInterval * 1000)),
            pingTimeout: .milliseconds(Int(pingTimeout * 1000)),
            tokenRefreshInterval: refresh, neverIndexSensitiveHeaders: neverIndex)
    }

    /// Makes the adapter (not started; connections open on first delivery).
    public static func makeAdapter(settings: APNsAdapterConfiguration, context: AdapterContext) throws(HubError) -> any PlatformAdapter {
        do {
            return try APNsAdapter(configuration: settings, logger: context.logger)
        } catch {
            throw HubError(.invalidConfiguration, "privateKey is not a PKCS#8 PEM P-256 key (an APNs .p8 file)")
        }
    }
}

extension APNsAdapterConfiguration: Equatable {
    /// Equal when every setting read from `hub.yaml` is; the clock is not one of them.
    public static func == (lhs: APNsAdapterConfiguration, rhs: APNsAdapterConfiguration) -> Bool {
        lhs.host == rhs.host && lhs.port == rhs.port && lhs.caCertificatePEM == rhs.caCertificatePEM
            && lhs.teamID == rhs.teamID && lhs.keyID == rhs.keyID && lhs.privateKeyPEM == rhs.privateKeyPEM
            && lhs.topic == rhs.topic && lhs.additionalTopics == rhs.additionalTopics && lhs.connections == rhs.connections
            && lhs.maximumStreams == rhs.maximumStreams && lhs.requestTimeout == rhs.requestTimeout
            && lhs.connectTimeout == rhs.connectTimeout && lhs.pingInterval == rhs.pingInterval
            && lhs.pingTimeout == rhs.pingTimeout && lhs.tokenRefreshInterval == rhs.tokenRefreshInterval
            && lhs.neverIndexSensitiveHeaders == rhs.neverIndexSensitiveHeaders
    }
}
