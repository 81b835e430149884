import AdapterKit
import Crypto
import Foundation

/// Settings of the APNs adapter (an `adapters:` entry with `type: apns`).
///
/// One adapter serves one environment (`host`, `port`, signed with `keyID`), or both: then `host` serves
/// ``environment``, the one tried first for a device whose environment is not known yet, and ``otherEnvironment``
/// the other one, with its own endpoint and key (the same key when one key serves both).
public struct APNsSettings: Sendable {
    /// The provider API's host (of the environment tried first, when the adapter serves both).
    public var host: String
    /// The provider API's port.
    public var port: Int
    /// The environment `host` serves, when known (`endpoint: production` or `sandbox`, or `endpoints:`); `nil` for an
    /// endpoint given as a URL alone. Named in the messages of key problems.
    public var environment: APNsEnvironment?
    /// The second environment, when one adapter serves both; ``environment`` must then name the first.
    public var otherEnvironment: APNsEnvironmentSettings?
    /// How many devices' environments the adapter remembers (in process) when it serves both; 0 remembers none.
    public var rememberedDevices: Int
    /// An extra CA to trust (PEM), for the emulator; `nil` trusts the system roots only.
    public var caCertificatePEM: String?
    /// The provider certificate `host`'s environment authenticates with instead of provider tokens (then
    /// ``teamID``, ``keyID`` and ``privateKeyPEM`` are empty and unused); `nil` for token-based authentication.
    public var certificate: APNsClientCertificate?
    /// The team id (`iss` of provider tokens).
    public var teamID: String
    /// The key id (`kid` of provider tokens) of the key that signs for `host`'s environment.
    public var keyID: String
    /// The `.p8` signing key (PKCS#8 PEM) for `host`'s environment. A secret.
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
    /// The broadcast channel management host of `host`'s environment (Apple's `api-manage-broadcast…` host for a
    /// named environment); `nil`: the adapter does not manage channels there.
    public var managementHost: String?
    /// Its port (Apple: 2196 production, 2195 sandbox).
    public var managementPort: Int

    /// Creates a configuration.
    public init(
        host: String, port: Int = 443, caCertificatePEM: String? = nil, teamID: String, keyID: String,
        privateKeyPEM: String, topic: String, additionalTopics: [String] = [], connections: Int = 4,
        maximumStreams: Int = 1000, requestTimeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10),
        pingInterval: Duration = .seconds(60), pingTimeout: Duration = .seconds(20), tokenRefreshInterval: TimeInterval = 3000,
        neverIndexSensitiveHeaders: Bool = true, environment: APNsEnvironment? = nil,
        otherEnvironment: APNsEnvironmentSettings? = nil, rememberedDevices: Int = 1_000_000,
        clock: any WallClock = SystemWallClock(), certificate: APNsClientCertificate? = nil, managementHost: String? = nil,
        managementPort: Int = 2196
    ) {
        self.certificate = certificate
        self.managementHost = managementHost
        self.managementPort = managementPort
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
        self.environment = environment
        self.otherEnvironment = otherEnvironment
        self.rememberedDevices = rememberedDevices
        self.clock = clock
    }

    /// Parses `production`, `sandbox` or an `https://host[:port]` URL.
    public static func endpoint(_ text: String) -> (host: String, port: Int)? {
        if let environment = namedEnvironment(text) { return (environment.appleHost, 443) }
        guard let url = URL(string: text), url.scheme?.lowercased() == "https", let host = url.host, !host.isEmpty else {
            return nil
        }
        return (host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), url.port ?? 443)
    }

    /// The environment an endpoint names by word (`production`; `sandbox` or `development`), `nil` for a URL.
    public static func namedEnvironment(_ text: String) -> APNsEnvironment? {
        switch text.lowercased() {
        case "production": .production
        case "sandbox", "development": .sandbox
        default: nil
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
            && lhs.neverIndexSensitiveHeaders == rhs.neverIndexSensitiveHeaders && lhs.environment == rhs.environment
            && lhs.otherEnvironment == rhs.otherEnvironment && lhs.rememberedDevices == rhs.rememberedDevices
            && lhs.certificate == rhs.certificate
            && lhs.managementHost == rhs.managementHost && lhs.managementPort == rhs.managementPort
    }
}
