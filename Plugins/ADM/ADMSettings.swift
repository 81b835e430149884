import Foundation

/// The ADM adapter's settings (`adapters: - type: adm` in `hub.yaml`).
public struct ADMSettings: Sendable, Equatable {
    /// Amazon's OAuth token endpoint (Login with Amazon).
    public static let defaultTokenEndpoint = "https://api.amazon.com/auth/o2/token"
    /// ADM's send API.
    public static let defaultEndpoint = "https://api.amazon.com"
    /// The scope ADM's access tokens are requested with.
    public static let scope = "messaging:push"

    /// The security profile's client id (the OAuth `client_id`, `amzn1.application-oa2-client.…`).
    public var clientID: String
    /// The security profile's client secret (the OAuth `client_secret`; never logged).
    public var clientSecret: String
    /// The OAuth token endpoint. Default ``defaultTokenEndpoint``.
    public var tokenEndpoint: String
    /// The send API's base URL. Default ``defaultEndpoint``.
    public var endpoint: String
    /// An extra CA certificate (PEM) to trust besides the system's, for the emulator.
    public var caCertificatePEM: String?
    /// Requests in flight at once across all callers (ADM takes one device per request). Default 64.
    public var maximumConcurrentRequests: Int
    /// HTTP clients requests are spread over. Default 4.
    public var connections: Int
    /// Deadline of each request, token requests included. Default 30 seconds.
    public var requestTimeout: Duration
    /// Deadline of opening a connection. Default 10 seconds.
    public var connectTimeout: Duration
    /// Access tokens are renewed when less than this is left of their lifetime. Default 5 minutes.
    public var tokenRenewalMargin: Duration

    /// Creates settings.
    public init(
        clientID: String, clientSecret: String, tokenEndpoint: String = ADMSettings.defaultTokenEndpoint,
        endpoint: String = ADMSettings.defaultEndpoint, caCertificatePEM: String? = nil,
        maximumConcurrentRequests: Int = 1000, connections: Int = 16, requestTimeout: Duration = .seconds(30),
        connectTimeout: Duration = .seconds(10), tokenRenewalMargin: Duration = .seconds(300)
    ) {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.tokenEndpoint = tokenEndpoint
        self.endpoint = endpoint
        self.caCertificatePEM = caCertificatePEM
        self.maximumConcurrentRequests = maximumConcurrentRequests
        self.connections = connections
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.tokenRenewalMargin = tokenRenewalMargin
    }

    /// The prefix of every client id of a Login with Amazon security profile.
    public static let clientIDPrefix = "amzn1.application-oa2-client."

    /// What is wrong with these settings, by `hub.yaml` key, each saying what to fix; empty when they are usable.
    public var problems: [(key: String, message: String)] {
        var problems: [(key: String, message: String)] = []
        let suffix = clientID.hasPrefix(Self.clientIDPrefix) ? clientID.dropFirst(Self.clientIDPrefix.count) : ""
        if suffix.isEmpty || !suffix.utf8.allSatisfy({ (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }) {
            problems.append((
                "clientId",
                "clientId is the security profile's client id: \(Self.clientIDPrefix) followed by letters and digits"))
        }
        if clientSecret.isEmpty || clientSecret.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) {
            problems.append(("clientSecret", "clientSecret is the security profile's client secret: printable ASCII, no spaces"))
        }
        for (key, value) in [("tokenEndpoint", tokenEndpoint), ("endpoint", endpoint)] {
            guard let url = URL(string: value), ["https", "http"].contains(url.scheme?.lowercased() ?? ""),
                url.host?.isEmpty == false, url.query == nil
            else {
                problems.append((key, "\(key) must be an https URL without a query, e.g. \(key == "endpoint" ? Self.defaultEndpoint : Self.defaultTokenEndpoint)"))
                continue
            }
        }
        if !(1...100_000).contains(maximumConcurrentRequests) {
            problems.append(("maximumConcurrentRequests", "maximumConcurrentRequests must be from 1 to 100000"))
        }
        if !(1...64).contains(connections) { problems.append(("connections", "connections must be from 1 to 64")) }
        if requestTimeout <= .zero { problems.append(("requestTimeoutSeconds", "requestTimeoutSeconds must be positive")) }
        if connectTimeout <= .zero { problems.append(("connectTimeoutSeconds", "connectTimeoutSeconds must be positive")) }
        if tokenRenewalMargin < .zero {
            problems.append(("tokenRenewalMarginSeconds", "tokenRenewalMarginSeconds must not be negative"))
        }
        return problems
    }
}
