import AdapterKit

/// One environment an ``APNsAdapter`` sends to: its connections, the key that signs for it, and the `:authority`
/// its requests carry.
final class APNsRoute: Sendable {
    /// The environment, when known (`nil` for a single endpoint given as a URL).
    let environment: APNsEnvironment?
    /// The key that signs for it, as outcomes name it.
    let key: APNsOutcomeMapping.KeyInUse
    let providerToken: APNsProviderToken
    let pool: HTTP2ConnectionPool
    let authority: String
    /// The connection to the environment's broadcast channel management host, when it has one.
    let management: (pool: HTTP2ConnectionPool, authority: String)?

    /// Creates a route; when `sharing` signs with the same key, its provider token is shared (one JWT for both
    /// environments).
    init(
        environment: APNsEnvironment?, host: String, port: Int, keyID: String, privateKeyPEM: String,
        sharing other: APNsRoute?, settings: APNsSettings, managementHost: String? = nil, managementPort: Int = 2196
    ) throws(APNsError) {
        self.environment = environment
        self.key = APNsOutcomeMapping.KeyInUse(environment: environment, keyID: keyID)
        if let other, other.key.keyID == keyID, other.providerToken.signs(withKeyPEM: privateKeyPEM) {
            self.providerToken = other.providerToken
        } else {
            do {
                self.providerToken = try APNsProviderToken(
                    privateKeyPEM: privateKeyPEM, teamID: settings.teamID, keyID: keyID,
                    refreshInterval: settings.tokenRefreshInterval, clock: settings.clock)
            } catch {
                let name = other == nil ? "privateKey" : "the \(environment.map(\.rawValue) ?? "second") environment's privateKey"
                throw APNsError(.invalidPrivateKey, "\(name) is not a PKCS#8 PEM P-256 key (an APNs .p8 file)")
            }
        }
        do {
            self.pool = try HTTP2ConnectionPool(
                settings: .init(
                    host: host, port: port, connections: settings.connections, maximumStreams: settings.maximumStreams,
                    connectTimeout: settings.connectTimeout.timeAmount, pingInterval: settings.pingInterval.timeAmount,
                    pingTimeout: settings.pingTimeout.timeAmount, caCertificatePEM: settings.caCertificatePEM))
        } catch {
            throw APNsError(.invalidCACertificate, "caCertificate is not a usable PEM CA certificate")
        }
        self.authority = port == 443 ? host : "\(host):\(port)"
        if let managementHost {
            do {
                // Channel management is occasional: one connection; a channel list can be long.
                let pool = try HTTP2ConnectionPool(
                    settings: .init(
                        host: managementHost, port: managementPort, connections: 1, maximumStreams: 100,
                        connectTimeout: settings.connectTimeout.timeAmount, pingInterval: settings.pingInterval.timeAmount,
                        pingTimeout: settings.pingTimeout.timeAmount, caCertificatePEM: settings.caCertificatePEM,
                        maximumBodyBytes: 4 << 20))
                self.management = (pool, managementPort == 443 ? managementHost : "\(managementHost):\(managementPort)")
            } catch {
                throw APNsError(.invalidCACertificate, "caCertificate is not a usable PEM CA certificate")
            }
        } else {
            self.management = nil
        }
    }
}

/// The requests of one adapter call bound for one environment, with the index of the delivery each one carries.
struct APNsRouteBatch {
    var requests: [APNsRequest] = []
    var indices: [Int] = []

    init(capacity: Int) {
        requests.reserveCapacity(capacity)
        indices.reserveCapacity(capacity)
    }

    mutating func append(_ request: APNsRequest, for index: Int) {
        requests.append(request)
        indices.append(index)
    }
}
