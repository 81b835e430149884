import AdapterKit
import Crypto
import Foundation

/// Settings of the APNs adapter (an `adapters:` entry with `type: apns`).
public struct APNsSettings: Sendable {
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

extension APNsSettings: Equatable {
    /// Equal when every setting read from `hub.yaml` is; the clock is not one of them.
    public static func == (lhs: APNsSettings, rhs: APNsSettings) -> Bool {
        lhs.host == rhs.host && lhs.port == rhs.port && lhs.caCertificatePEM == rhs.caCertificatePEM
            && lhs.teamID == rhs.teamID && lhs.keyID == rhs.keyID && lhs.privateKeyPEM == rhs.privateKeyPEM
            && lhs.topic == rhs.topic && lhs.additionalTopics == rhs.additionalTopics && lhs.connections == rhs.connections
            && lhs.maximumStreams == rhs.maximumStreams && lhs.requestTimeout == rhs.requestTimeout
            && lhs.connectTimeout == rhs.connectTimeout && lhs.pingInterval == rhs.pingInterval
            && lhs.pingTimeout == rhs.pingTimeout && lhs.tokenRefreshInterval == rhs.tokenRefreshInterval
            && lhs.neverIndexSensitiveHeaders == rhs.neverIndexSensitiveHeaders
    }
}
