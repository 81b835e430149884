import AdapterKit

/// One environment an ``APNsAdapter`` sends to: its connections, the key that signs for it (or the provider
/// certificate its connections present), and the `:authority` its requests carry.
final class APNsRoute: Sendable {
    /// The environment, when known (`nil` for a single endpoint given as a URL).
    let environment: APNsEnvironment?
    /// The key that signs for it, as outcomes name it.
    let key: APNsOutcomeMapping.KeyInUse
    /// The provider token source; `nil` when the environment authenticates with a certificate.
    let providerToken: APNsProviderToken?
    /// The provider certificate its connections present; `nil` for token-based authentication.
    let certificate: APNsClientCertificate?
    let pool: HTTP2ConnectionPool
    let authority: String
    /// The connection to the environment's broadcast channel management host, when it has one.
    let management: (pool: HTTP2ConnectionPool, authority: String)?

    /// Creates a route; when `sharing` signs with the same key, its provider token is shared (one JWT for both
    /// environments).
    init(
        environment: APNsEnvironment?, host: String, port: Int, keyID: String, privateKeyPEM: String,
        certificate: APNsClientCertificate? = nil, sharing other: APNsRoute?, settings: APNsSettings,
        managementHost: String? = nil, managementPort: Int = 2196
    ) throws(APNsError) {
        self.environment = environment
        self.key = APNsOutcomeMapping.KeyInUse(environment: environment, keyID: keyID)
        self.certificate = certificate
        if certificate != nil {
            self.providerToken = nil
        } else if let other, other.key.keyID == keyID, let shared = other.providerToken, shared.signs(withKeyPEM: privateKeyPEM) {
            self.providerToken = shared
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
                    pingTimeout: settings.pingTimeout.timeAmount, caCertificatePEM: settings.caCertificatePEM,
                    clientCertificate: certificate.map { (chain: $0.chain, privateKey: $0.privateKey) }))
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
                        maximumBodyBytes: 4 << 20,
                        clientCertificate: certificate.map { (chain: $0.chain, privateKey: $0.privateKey) }))
                self.management = (pool, managementPort == 443 ? managementHost : "\(managementHost):\(managementPort)")
            } catch {
                throw APNsError(.invalidCACertificate, "caCertificate is not a usable PEM CA certificate")
            }
        } else {
            self.management = nil
        }
    }

    /// How this environment's requests authenticate now: with the connection's certificate (no `authorization`
    /// header), with a current provider token, or not at all when the token cannot be signed.
    func authorization() -> APNsAuthorization {
        guard let providerToken else { return .certificate }
        guard let token = try? providerToken.token() else { return .unavailable }
        return .token("bearer " + token)
    }
}

/// How the requests of one environment authenticate (see ``APNsRoute/authorization()``).
enum APNsAuthorization {
    /// The connections present a provider certificate; requests carry no `authorization` header.
    case certificate
    /// Requests carry this `authorization` value (`bearer <provider token>`).
    case token(String)
    /// The provider token cannot be signed.
    case unavailable

    /// The `authorization` header value, `nil` for none; `nil` inside `nil` when the requests cannot be sent.
    var header: String?? {
        switch self {
        case .certificate: .some(nil)
        case .token(let value): .some(value)
        case .unavailable: nil
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
